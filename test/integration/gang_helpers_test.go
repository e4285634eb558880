package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
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

// holdLast keeps the last of a gang's pods from being placed for as long
// as a test wants (up to the gang's Permit wait), as a member waiting for
// the room its preemption made does: it may go only on node <ns>-hold,
// whose one card a preemptible pod of lower priority in the same queue
// holds, in namespace <ns>-hold. Evicted for the member, that pod stays
// terminating, with no kubelet to confirm it gone, until releaseHold
// deletes it. The gang's pods get a higher priority than the holder, and
// stay preemptible (beyond a queue's guarantee, as non-preemptible work
// may not be); the others are placed and wait at Permit for the last.
func holdLast(t *testing.T, ns, queue string, pods []*corev1.Pod) {
	t.Helper()
	ensurePriorityClasses(t)
	hold := ns + "-hold"
	createNodes(t, builder.MakeNode(hold).GPU(h200, 1).Label("cardinal.dev/test-hold", hold).Obj())
	createNamespaceInQueue(t, hold, queue)
	holder := builder.MakePod(hold, "holder").Req("cpu", "100m").GPU(1).NodeSelector("cardinal.dev/test-hold", hold).
		Label(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible).Obj()
	holder.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	createPods(t, prioritized(lowPriority, holder)...)
	waitBound(t, hold, podsNamed("holder"))
	prioritized(highPriority, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, pods...)...)
	last := pods[len(pods)-1]
	last.Spec.NodeSelector = map[string]string{"cardinal.dev/test-hold": hold}
}

// releaseHold lets the member holdLast held be placed: the holder it
// evicted is gone.
func releaseHold(t *testing.T, ns string) {
	t.Helper()
	deletePod(t, ns+"-hold", "holder")
}
