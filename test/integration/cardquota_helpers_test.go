package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

const (
	h200   = "NVIDIA-H200"
	rtx    = "NVIDIA-GeForce-RTX-4090"
	rtxD   = "NVIDIA-GeForce-RTX-4090-D"
	migRes = corev1.ResourceName("nvidia.com/mig-1g.18gb")
	mig    = "NVIDIA-H200/mig-1g.18gb-mixed"
	mps    = "NVIDIA-L40S/mps-45g*1/4"
)

// cardPods makes n pods of queue's namespace, each asking for one whole card
// of the models in cardName ("" for any).
func cardPods(ns, prefix, cardName string, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := builder.MakePod(ns, fmt.Sprintf("%s-%d", prefix, i)).Req("cpu", "100m").GPU(1)
		if cardName != "" {
			p.CardName(cardName)
		}
		out = append(out, p.Obj())
	}
	return out
}

// queueCards is a queue's status.cards as model to allocated.
func queueCards(q *v1alpha1.Queue) map[string]int32 {
	out := map[string]int32{}
	for _, c := range q.Status.Cards {
		out[c.Name] = c.Allocated
	}
	return out
}

func waitQueueCards(t *testing.T, queue string, want map[string]int32) {
	t.Helper()
	waitQueueStatus(t, queue, fmt.Sprintf("cards %v", want), func(q *v1alpha1.Queue) bool {
		got := queueCards(q)
		for m, n := range want {
			if got[m] != n {
				return false
			}
		}
		return true
	})
}

// pendingPod returns the name of a pod of ns that is not bound.
func pendingPod(t *testing.T, ns string) string {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			return p.Name
		}
	}
	t.Fatalf("no pending pod in %s", ns)
	return ""
}

func pendingPodWithPrefix(t *testing.T, ns, prefix string) string {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" && strings.HasPrefix(p.Name, prefix) {
			return p.Name
		}
	}
	t.Fatalf("no pending pod %s-* in %s", prefix, ns)
	return ""
}

// cardDeployment is a Deployment of pods that each use one card of model.
func cardDeployment(ns, name, model string, replicas int32) *appsv1.Deployment {
	pod := builder.MakePod(ns, "").Label("app", name).Req("cpu", "100m").GPU(1).CardName(model).Obj()
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
		},
	}
}

// scale sets a Deployment's replicas through its scale subresource, as a
// HorizontalPodAutoscaler does.
func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	s, err := env.kube.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Replicas = replicas
	if _, err := env.kube.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// appPods lists the pods of a Deployment, bound and pending.
func appPods(t *testing.T, ns, app string) (bound, pending []string) {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName != "" {
			bound = append(bound, p.Name)
		} else {
			pending = append(pending, p.Name)
		}
	}
	return bound, pending
}
