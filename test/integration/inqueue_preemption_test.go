package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestFullQueuePreemptsItsOwnLowerPriorityWork: a queue exactly at its
// capability runs a preemptible gang of priority 10 that holds all of it;
// a preemptible gang of priority 1000 arrives in the same queue. Admission
// counts what the gang may preempt inside its queue (SPEC §3.4, §5.4), so
// the gang is tried, and preemption takes the low gang whole: the high gang
// binds, the low gang is never left 1 to 3 pods bound (SPEC §5.3). The
// same for the queue's card quota, its cpu capability, and single pods.
func TestFullQueuePreemptsItsOwnLowerPriorityWork(t *testing.T) {
	ensurePriorityClasses(t)
	preemptible := map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible}
	tests := []struct {
		name  string
		queue func(name string) *v1alpha1.Queue
		// nodes fit low and high together: only the queue is full.
		nodes func(prefix string) []*corev1.Node
		gpus  int
	}{
		{"card quota (guarantee = capability = 4 NVIDIA-H200)",
			func(name string) *v1alpha1.Queue { return builder.MakeQueue(name).Card(h200, 4, 4).Obj() },
			func(prefix string) []*corev1.Node { return gpuNodes(prefix, 2, 2) }, 1},
		{"cpu capability (400m)",
			func(name string) *v1alpha1.Queue {
				return builder.MakeQueue(name).Capability(corev1.ResourceCPU, "400m").Obj()
			},
			func(prefix string) []*corev1.Node { return []*corev1.Node{builder.MakeNode(prefix + "-0").Obj()} }, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("full-own-%d", i)
			createQueue(t, tc.queue(name))
			ns := createNamespaceInQueue(t, name, name)
			createNodes(t, tc.nodes(fmt.Sprintf("fullown%d", i))...)
			startScheduler(t)

			podGroupWith(t, ns, "low", 4, preemptible)
			createPods(t, prioritized(lowPriority, gangPodsOf(ns, "low", 4, tc.gpus)...)...)
			waitBound(t, ns, gangsBound(map[string]int{"low": 4}))

			podGroupWith(t, ns, "high", 2, preemptible)
			createPods(t, prioritized(highPriority, gangPodsOf(ns, "high", 2, tc.gpus)...)...)
			partly := partialWatch{}
			err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
				got := boundPerGang(t, ns)
				if err := partly.check(got, map[string]int{"low": 4, "high": 2}); err != nil {
					return false, err
				}
				return got["high"] == 2 && got["low"] == 0, nil
			})
			if err != nil {
				logEvents(t, ns)
				t.Fatalf("high did not replace low whole in its full queue: %v (%v)", err, boundPerGang(t, ns))
			}
			waitGangNote(t, ns, "low", "Preempted", "4 of its pods evicted")
			holdCountsWithin(t, ns, holdWindow, map[string][2]int{"low": {0, 0}, "high": {2, 2}})
		})
	}

	t.Run("single pods", func(t *testing.T) {
		ns := gpuQueue(t, "full-own-single", 2, 2, true)
		createNodes(t, gpuNodes("fullownsingle", 1, 4)...)
		startScheduler(t)
		createPods(t, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, prioritized(lowPriority, cardPods(ns, "low", "", 2)...)...)...)
		waitBound(t, ns, boundCount(2))
		createPods(t, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, prioritized(highPriority, cardPods(ns, "high", "", 1)...)...)...)
		waitBound(t, ns, podsNamed("high-0"))
		waitVictimEvent(t, ns, "low-", "Preempted", "this pod has priority 10")
		holdFor(t, holdWindow, func() error {
			if got := boundPods(t, ns); len(got) != 2 {
				return fmt.Errorf("bound pods %v, want high-0 and one low pod: one victim, not two, and never past the capability of 2", got)
			}
			return nil
		})
	})
}

// TestFullQueueHeldWhenNothingMayBePreempted: the same full queue, but what
// fills it may not be preempted by the gang: non-preemptible work, or
// preemptible work of the same priority. The gang stays held at admission
// with a reason that says what it counted as free and why the rest is not,
// and nothing of the queue is evicted (SPEC §3.4, §5.2, §5.5).
func TestFullQueueHeldWhenNothingMayBePreempted(t *testing.T) {
	ensurePriorityClasses(t)
	tests := []struct {
		name        string
		lowLabels   map[string]string
		lowPriority string
		note        string
	}{
		{"non-preemptible", map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible}, lowPriority,
			"even counting all but its queue's non-preemptible work as free"},
		{"preemptible of the same priority", map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible}, highPriority,
			"the rest is non-preemptible or of priority 1000 or more"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := gpuQueue(t, fmt.Sprintf("full-held-%d", i), 4, 4, true)
			createNodes(t, gpuNodes(fmt.Sprintf("fullheld%d", i), 2, 2)...)
			startScheduler(t)

			podGroupWith(t, ns, "low", 4, tc.lowLabels)
			createPods(t, prioritized(tc.lowPriority, gangPods(ns, "low", 4, 1)...)...)
			waitBound(t, ns, gangsBound(map[string]int{"low": 4}))
			before := boundPods(t, ns)

			podGroupWith(t, ns, "high", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible})
			createPods(t, prioritized(highPriority, gangPods(ns, "high", 2, 1)...)...)
			waitEvent(t, ns, "GangHeldByCardQuota on PodGroup high saying nothing it may preempt frees the room", func(e eventsv1.Event) bool {
				return e.Regarding.Kind == "PodGroup" && e.Regarding.Name == "high" && e.Reason == "GangHeldByCardQuota" &&
					strings.Contains(e.Note, "would use 6, capability 4") &&
					strings.Contains(e.Note, tc.note)
			})
			holdFor(t, holdWindow, func() error {
				if got := boundPods(t, ns); fmt.Sprint(got) != fmt.Sprint(before) {
					return fmt.Errorf("bound pods changed from %v to %v: work the gang may not preempt was evicted", before, got)
				}
				return nil
			})
		})
	}
}

// gangPodsOf is gangPods, with no GPU request at all when gpus is 0.
func gangPodsOf(ns, group string, n, gpus int) []*corev1.Pod {
	pods := gangPods(ns, group, n, gpus)
	if gpus == 0 {
		for _, p := range pods {
			delete(p.Spec.Containers[0].Resources.Requests, builder.GPUResource)
			delete(p.Spec.Containers[0].Resources.Limits, builder.GPUResource)
		}
	}
	return pods
}

// TestNonPreemptibleGangHeldAtGuarantee: a queue with guarantee 4 and
// capability 8 of NVIDIA-H200 runs 4 non-preemptible cards and 4
// lower-priority preemptible ones. A non-preemptible gang of 2 could take
// the preemptible cards' quota, but non-preemptible work may use only the
// guarantee (SPEC §3.5), which preemption cannot free: it stays held with
// a reason that says so, and nothing is evicted.
func TestNonPreemptibleGangHeldAtGuarantee(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "np-at-guarantee", 4, 8, true)
	createNodes(t, gpuNodes("npatguarantee", 3, 4)...)
	startScheduler(t)

	podGroupWith(t, ns, "np", 4, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible})
	createPods(t, prioritized(lowPriority, gangPods(ns, "np", 4, 1)...)...)
	podGroupWith(t, ns, "low", 4, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible})
	createPods(t, prioritized(lowPriority, gangPods(ns, "low", 4, 1)...)...)
	waitBound(t, ns, gangsBound(map[string]int{"np": 4, "low": 4}))
	before := boundPods(t, ns)

	podGroupWith(t, ns, "high", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible})
	createPods(t, prioritized(highPriority, gangPods(ns, "high", 2, 1)...)...)
	waitGangNote(t, ns, "high", "GangHeldByCardQuota", "it is non-preemptible and its min needs 2 more pods; queue "+ns+" guarantees NVIDIA-H200 4 and non-preemptible pods would use 6")
	holdFor(t, holdWindow, func() error {
		if got := boundPods(t, ns); fmt.Sprint(got) != fmt.Sprint(before) {
			return fmt.Errorf("bound pods changed from %v to %v: the gang was tried past its queue's guarantee", before, got)
		}
		return nil
	})
}
