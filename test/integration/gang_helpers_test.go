package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/test/builder"
)

func podGroups() pgclient.Interface {
	return pgclient.NewForConfigOrDie(env.cp.Config())
}

// createPodGroup makes a PodGroup of minMember in ns.
func createPodGroup(t *testing.T, ns, name string, minMember int32) {
	t.Helper()
	createPodGroupFrom(t, builder.MakePodGroup(ns, name, minMember).Obj())
}

// createPodGroupFrom creates pg (built with builder.MakePodGroup).
func createPodGroupFrom(t *testing.T, pg *schedv1alpha1.PodGroup) {
	t.Helper()
	if _, err := podGroups().SchedulingV1alpha1().PodGroups(pg.Namespace).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func gangPod(ns, group string, i, gpus int) *corev1.Pod {
	return builder.MakePod(ns, fmt.Sprintf("%s-%d", group, i)).
		Label("scheduling.x-k8s.io/pod-group", group).Req("cpu", "100m").GPU(gpus).Obj()
}

func gangPods(ns, group string, n, gpus int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, gangPod(ns, group, i, gpus))
	}
	return out
}

// gpuNodes makes n nodes of gpus H200 cards each, named <prefix>-<i>.
func gpuNodes(prefix string, n, gpus int) []*corev1.Node {
	var out []*corev1.Node
	for i := range n {
		out = append(out, builder.MakeNode(fmt.Sprintf("%s-%d", prefix, i)).GPU("NVIDIA-H200", gpus).Obj())
	}
	return out
}

// boundPerGang counts bound pods per PodGroup label in ns.
func boundPerGang(t *testing.T, ns string) map[string]int {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Labels["scheduling.x-k8s.io/pod-group"]]++
		}
	}
	return out
}

// holdBoundCounts checks the bound pods per gang stay exactly want over the hold window.
func holdBoundCounts(t *testing.T, ns string, want map[string]int, window time.Duration) {
	t.Helper()
	holdFor(t, window, func() error {
		if got := boundPerGang(t, ns); !equalCounts(got, want) {
			return fmt.Errorf("bound pods per gang changed to %v, want %v throughout", got, want)
		}
		return nil
	})
}

func equalCounts(got, want map[string]int) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	for k, v := range got {
		if want[k] != v {
			return false
		}
	}
	return true
}

// landing bounds how long the API calls of one decision (a gang's binds,
// a preemption's deletions), one call each, may take to land on a loaded
// machine.
const landing = 10 * time.Second

// partialWatch tells a gang caught partly bound while its binds or
// deletions land from one left that way.
type partialWatch map[string]time.Time

// check returns an error if a gang of mins has stayed bound at some count
// between 0 and its min for longer than landing.
func (w partialWatch) check(got, mins map[string]int) error {
	for g, m := range mins {
		n := got[g]
		if n == 0 || n >= m {
			delete(w, g)
			continue
		}
		since, ok := w[g]
		if !ok {
			w[g] = time.Now()
			continue
		}
		if time.Since(since) > landing {
			return fmt.Errorf("gang %s stayed partly bound, %d of %d, for over %s (%v)", g, n, m, landing, got)
		}
	}
	return nil
}
