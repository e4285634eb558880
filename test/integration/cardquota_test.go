package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/test/builder"
)

const (
	h200   = "NVIDIA-H200"
	rtx    = "NVIDIA-GeForce-RTX-4090"
	rtxD   = "NVIDIA-GeForce-RTX-4090-D"
	migRes = corev1.ResourceName("nvidia.com/mig-1g.18gb")
	mig    = "NVIDIA-H200/mig-1g.18gb-mixed"
	mps    = "NVIDIA-L40S/mps-11g*1/4"
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

// TestCardQuotaCap: a queue with NVIDIA-H200 quota 3, five one-card nodes
// and five pods asking for NVIDIA-H200: exactly 3 bind, a pending one says
// why in cards; deleting a bound one lets exactly one more bind (SPEC §4.1,
// §4.2, §4.6).
func TestCardQuotaCap(t *testing.T) {
	createQueue(t, builder.MakeQueue("cap-h200").Card(h200, 3, 3).Obj())
	ns := createNamespaceInQueue(t, "card-cap", "cap-h200")
	createNodes(t, gpuNodes("cc", 5, 1)...)
	startScheduler(t)

	createPods(t, cardPods(ns, "p", h200, 5)...)
	bound := waitBoundCount(t, ns, 3)
	holdBoundAtMost(t, ns, 3)
	waitPodEvent(t, ns, pendingPod(t, ns), "queue cap-h200 has insufficient NVIDIA-H200 quota: requested 1, would use 4, capability 3")
	waitQueueCards(t, "cap-h200", map[string]int32{h200: 3})

	if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), bound[0], metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitBoundCount(t, ns, 3)
	holdBoundAtMost(t, ns, 3)
}

// TestCardAlternatives: pods that may use "4090|4090-D" are charged for the
// model they land on: with quota 4090: 1 and 4090-D: 2, three such pods all
// bind, exactly one on the 4090 (SPEC §4.1, §4.3).
func TestCardAlternatives(t *testing.T) {
	createQueue(t, builder.MakeQueue("alt").Card(rtx, 1, 1).Card(rtxD, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "card-alt", "alt")
	createNodes(t,
		builder.MakeNode("alt-4090").GPU(rtx, 4).Obj(),
		builder.MakeNode("alt-4090d-0").GPU(rtxD, 4).Obj(),
		builder.MakeNode("alt-4090d-1").GPU(rtxD, 4).Obj(),
	)
	startScheduler(t)

	createPods(t, cardPods(ns, "p", rtx+"|"+rtxD, 3)...)
	nodes := waitBound(t, ns, "p-0", "p-1", "p-2")
	on4090 := 0
	for _, n := range nodes {
		if n == "alt-4090" {
			on4090++
		}
	}
	if on4090 != 1 {
		t.Errorf("%d pods on the 4090 node, want exactly 1: %v", on4090, nodes)
	}
	waitQueueCards(t, "alt", map[string]int32{rtx: 1, rtxD: 2})

	// A fourth finds no quota for either model and says so for both.
	createPods(t, cardPods(ns, "extra", rtx+"|"+rtxD, 1)...)
	waitPodEvent(t, ns, "extra-0", "queue alt has insufficient NVIDIA-GeForce-RTX-4090 quota: requested 1, would use 2, capability 1; queue alt has insufficient NVIDIA-GeForce-RTX-4090-D quota: requested 1, would use 3, capability 2")
	neverBound(t, ns, "extra-0")
}

// TestCardPreference: with quota and room for both, a "4090|4090-D" pod
// goes to the 4090 (SPEC §4.3).
func TestCardPreference(t *testing.T) {
	createQueue(t, builder.MakeQueue("pref").Card(rtx, 4, 4).Card(rtxD, 4, 4).Obj())
	ns := createNamespaceInQueue(t, "card-pref", "pref")
	createNodes(t,
		builder.MakeNode("pref-4090d-0").GPU(rtxD, 8).Obj(),
		builder.MakeNode("pref-4090").GPU(rtx, 1).Obj(),
		builder.MakeNode("pref-4090d-1").GPU(rtxD, 8).Obj(),
	)
	startScheduler(t)
	createPods(t, cardPods(ns, "p", rtx+"|"+rtxD, 1)...)
	if got := waitBound(t, ns, "p-0")["p-0"]; got != "pref-4090" {
		t.Errorf("p-0 bound to %s, want pref-4090, its first alternative", got)
	}
}

// TestCardModelWithoutQuota: a model the queue does not list cannot be
// used, even with a node of it free; the pod says why (SPEC §1.1, §4.2).
func TestCardModelWithoutQuota(t *testing.T) {
	createQueue(t, builder.MakeQueue("only-h200").Card(h200, 1, 1).Obj())
	ns := createNamespaceInQueue(t, "card-noquota", "only-h200")
	createNodes(t, builder.MakeNode("nq-l40s").GPU("NVIDIA-L40S", 4).Obj())
	startScheduler(t)

	createPods(t, cardPods(ns, "any", "", 1)...)
	createPods(t, cardPods(ns, "named", "NVIDIA-L40S", 1)...)
	waitPodEvent(t, ns, "any-0", "queue only-h200 has no quota for card model NVIDIA-L40S")
	waitPodEvent(t, ns, "named-0", "queue only-h200 has no quota for card model NVIDIA-L40S")
	neverBound(t, ns, "any-0", "named-0")
}

// TestMIGAndMPS: MIG slices and MPS shares are sub-cards with their own
// names and quota (SPEC §1.4): with quota 2 of each and three pods of
// each, exactly two of each bind, charged to the sub-card name.
func TestMIGAndMPS(t *testing.T) {
	createQueue(t, builder.MakeQueue("sub").Card(mig, 2, 2).Card(mps, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "card-sub", "sub")
	createNodes(t,
		builder.MakeNode("sub-mig").Res(migRes, "3").Label("nvidia.com/gpu.product", h200).Label("nvidia.com/mig.strategy", "mixed").Obj(),
		builder.MakeNode("sub-mps").Res(cardmodel.MPSResource, "8").Label("nvidia.com/gpu.product", "NVIDIA-L40S").
			Label(cardmodel.MPSReplicasLabel, "4").Label(cardmodel.NVIDIAMemoryLabel, "46068").Obj(),
	)
	startScheduler(t)

	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods,
			builder.MakePod(ns, fmt.Sprintf("mig-%d", i)).Extended(migRes, 1).Obj(),
			builder.MakePod(ns, fmt.Sprintf("mps-%d", i)).Extended(cardmodel.MPSResource, 1).Obj())
	}
	createPods(t, pods...)
	waitBoundCount(t, ns, 4)
	holdBoundAtMost(t, ns, 4)
	counts := map[string]int{}
	for _, name := range boundPods(t, ns) {
		counts[strings.SplitN(name, "-", 2)[0]]++
	}
	if counts["mig"] != 2 || counts["mps"] != 2 {
		t.Errorf("bound per kind %v, want 2 MIG and 2 MPS", counts)
	}
	waitQueueCards(t, "sub", map[string]int32{mig: 2, mps: 2})
	waitPodEvent(t, ns, pendingPodWithPrefix(t, ns, "mig"), "queue sub has insufficient NVIDIA-H200/mig-1g.18gb-mixed quota: requested 1, would use 3, capability 2")
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

// TestMixedAlternativesRefused: alternatives that need different resource
// names (a whole card or a MIG slice) are refused with an event, not
// half-scheduled (SPEC §4.4); a bad card-name says how to fix it.
func TestMixedAlternativesRefused(t *testing.T) {
	createQueue(t, builder.MakeQueue("mixed").Card(h200, 4, 4).Card(mig, 4, 4).Obj())
	ns := createNamespaceInQueue(t, "card-mixed", "mixed")
	createNodes(t, builder.MakeNode("mx-0").GPU(h200, 4).Res(migRes, "4").Obj())
	startScheduler(t)

	createPods(t,
		builder.MakePod(ns, "mixed").GPU(1).CardName(h200+"|"+mig).Obj(),
		builder.MakePod(ns, "bad").GPU(1).CardName(h200+"||").Obj(),
		builder.MakePod(ns, "volcano").GPU(1).Annotation(v1alpha1.VolcanoCardNameAnnotation, "NVIDIA-H200").Obj(),
	)
	waitPodEvent(t, ns, "mixed", "card models NVIDIA-H200 and NVIDIA-H200/mig-1g.18gb-mixed need different resources (whole cards and nvidia.com/mig-1g.18gb)")
	waitPodEvent(t, ns, "bad", "annotation cardinal.dev/card-name is invalid")
	waitBound(t, ns, "volcano")
	neverBound(t, ns, "mixed", "bad")
}

// TestCardRequestAdmission: a gang whose card-request cannot fit its
// queue's card quota is held whole, its PodGroup says why, and it is
// admitted when the quota is raised (SPEC §1.2, §3.4).
func TestCardRequestAdmission(t *testing.T) {
	createQueue(t, builder.MakeQueue("gangs").Card(h200, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "card-gang", "gangs")
	createNodes(t, gpuNodes("cg", 2, 4)...)
	startScheduler(t)

	createPodGroup(t, ns, "train", 2)
	pg, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(context.Background(), "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg.Annotations = map[string]string{v1alpha1.CardRequestAnnotation: `{"NVIDIA-H200":4}`}
	if _, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Update(context.Background(), pg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPods(t, gangPods(ns, "train", 2, 2)...)
	waitEvent(t, ns, "GangHeldByCardQuota on PodGroup train", func(e eventsv1.Event) bool {
		return e.Regarding.Name == "train" && e.Reason == "GangHeldByCardQuota" &&
			strings.Contains(e.Note, "queue gangs has insufficient NVIDIA-H200 quota: requested 4, would use 4, capability 2")
	})
	waitPodEvent(t, ns, "train-0", "gang card-gang/train is held")
	holdBoundAtMost(t, ns, 0)

	q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(context.Background(), "gangs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Cards = []v1alpha1.CardQuota{{Name: h200, Guarantee: 4}}
	if _, err := env.cardinal.SchedulingV1alpha1().Queues().Update(context.Background(), q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBoundCount(t, ns, 2)
	waitQueueCards(t, "gangs", map[string]int32{h200: 4})
}

// TestUnlabelledGPUs: a node whose GPUs carry no product label has no card
// model: an event on the node says so, pods that name no model use its GPUs
// as the plain resource, and pods that name one do not (SPEC §1.4).
func TestUnlabelledGPUs(t *testing.T) {
	createQueue(t, builder.MakeQueue("plain").Capability(builder.GPUResource, "2").Card(h200, 1, 1).Obj())
	ns := createNamespaceInQueue(t, "card-plain", "plain")
	createNodes(t, builder.MakeNode("plain-0").Res(builder.GPUResource, "4").Obj())
	startScheduler(t)

	waitEvent(t, metav1.NamespaceDefault, "UnlabelledCards event on node plain-0", func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "Node" && e.Regarding.Name == "plain-0" && e.Reason == "UnlabelledCards" &&
			strings.Contains(e.Note, "no label nvidia.com/gpu.product")
	})
	createPods(t, cardPods(ns, "named", h200, 1)...)
	waitPodEvent(t, ns, "named-0", "node plain-0's cards have no model (no product label), and the pod asks for NVIDIA-H200")
	createPods(t, cardPods(ns, "any", "", 3)...)
	waitBoundCount(t, ns, 2)
	holdBoundAtMost(t, ns, 2)
	if bound := boundPods(t, ns); slices.Contains(bound, "named-0") {
		t.Errorf("a pod naming a model bound to a node without models: %v", bound)
	}
}

// TestCardQuotaAcrossRestart: card counts are rebuilt from the cluster
// after a restart, and the queue never goes over its quota afterwards
// (SPEC §3.1).
func TestCardQuotaAcrossRestart(t *testing.T) {
	createQueue(t, builder.MakeQueue("restart-cards").Card(h200, 3, 3).Obj())
	ns := createNamespaceInQueue(t, "card-restart", "restart-cards")
	createNodes(t, gpuNodes("cr", 3, 2)...)
	s := startScheduler(t)
	createPods(t, cardPods(ns, "a", "", 3)...)
	waitBoundCount(t, ns, 3)
	s.Stop()

	createPods(t, cardPods(ns, "b", "", 3)...)
	startScheduler(t)
	holdBoundAtMost(t, ns, 3)
	waitPodEvent(t, ns, "b-0", "queue restart-cards has insufficient NVIDIA-H200 quota")
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

// TestCardQuotaWithScaledDeployments: Deployments scaled as an HPA scales
// them, in a queue with quota for 3 cards: a pod created beyond the quota
// waits with an event, and scaling another Deployment in gives the quota
// back so the waiting pod binds (SPEC §4.5). Pods are created and deleted
// by kube-controller-manager's ReplicaSet controller.
func TestCardQuotaWithScaledDeployments(t *testing.T) {
	createQueue(t, builder.MakeQueue("hpa").Card(h200, 3, 3).Obj())
	ns := createNamespaceInQueue(t, "card-hpa", "hpa")
	createNodes(t, gpuNodes("hpa", 2, 4)...)
	startScheduler(t)
	ctx := context.Background()
	for _, d := range []*appsv1.Deployment{cardDeployment(ns, "web", h200, 3), cardDeployment(ns, "worker", h200, 0)} {
		if _, err := env.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitBoundCount(t, ns, 3)

	scale(t, ns, "worker", 1)
	var waiting string
	err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(context.Context) (bool, error) {
		_, pending := appPods(t, ns, "worker")
		if len(pending) == 1 {
			waiting = pending[0]
		}
		return waiting != "", nil
	})
	if err != nil {
		t.Fatal("the scaled-out worker pod never appeared")
	}
	waitPodEvent(t, ns, waiting, "queue hpa has insufficient NVIDIA-H200 quota: requested 1, would use 4, capability 3")
	holdBoundAtMost(t, ns, 3)

	scale(t, ns, "web", 2)
	waitBound(t, ns, waiting)
	holdBoundAtMost(t, ns, 3)
	if bound, _ := appPods(t, ns, "web"); len(bound) != 2 {
		t.Errorf("web has %d pods bound, want 2", len(bound))
	}
	waitQueueCards(t, "hpa", map[string]int32{h200: 3})
}

// TestNodeChangesUnderPods: a node relabelled, re-sliced into MIG and
// removed under running pods crashes nothing; pods for the model that is
// gone wait with an event, the new MIG slices are used within their quota,
// and status shows each model's use (SPEC §3.6).
func TestNodeChangesUnderPods(t *testing.T) {
	createQueue(t, builder.MakeQueue("reshape").Card(h200, 2, 2).Card(mig, 1, 1).Obj())
	ns := createNamespaceInQueue(t, "card-reshape", "reshape")
	createNodes(t, builder.MakeNode("rs-0").GPU(h200, 2).Obj())
	s := startScheduler(t)
	ctx := context.Background()

	createPods(t, cardPods(ns, "whole", h200, 1)...)
	waitBound(t, ns, "whole-0")
	waitQueueCards(t, "reshape", map[string]int32{h200: 1})

	// Re-sliced into MIG: no whole cards left, seven 1g.18gb slices.
	n, err := env.kube.CoreV1().Nodes().Get(ctx, "rs-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(n.Status.Allocatable, builder.GPUResource)
	delete(n.Status.Capacity, builder.GPUResource)
	n.Status.Allocatable[migRes] = *resourceQty("7")
	n.Status.Capacity[migRes] = *resourceQty("7")
	if _, err := env.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPods(t, cardPods(ns, "more", h200, 1)...)
	createPods(t,
		builder.MakePod(ns, "slice-0").Extended(migRes, 1).Obj(),
		builder.MakePod(ns, "slice-1").Extended(migRes, 1).Obj())
	waitBoundCount(t, ns, 2) // whole-0 and one slice
	waitPodEvent(t, ns, pendingPodWithPrefix(t, ns, "slice"), "queue reshape has insufficient NVIDIA-H200/mig-1g.18gb-mixed quota: requested 1, would use 2, capability 1")
	neverBound(t, ns, "more-0")
	waitQueueCards(t, "reshape", map[string]int32{mig: 1})

	// Removed under its pods: the scheduler keeps running.
	if err := env.kube.CoreV1().Nodes().Delete(ctx, "rs-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createPods(t, cardPods(ns, "after", h200, 1)...)
	holdFor(t, holdWindow, func() error {
		if err := s.Exited(); err != nil {
			return fmt.Errorf("the scheduler exited: %v", err)
		}
		return nil
	})
	if s.Exited() != nil {
		t.Fatal("the scheduler exited after the node was removed")
	}
}
