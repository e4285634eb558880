package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// promptly bounds how long something that must follow a change at once may
// take: well under permitWaitingTimeSeconds (60 s), so a gang that only
// moves when its Permit wait runs out fails the test.
const promptly = 20 * time.Second

// createPlacingGang makes a PodGroup with minMember min and min one-GPU
// pods in ns (whose queue is named like it), the last held back by
// holdLast: the others are placed and wait at Permit for it, so the gang
// is being placed for as long as the test wants. Pods are named
// <name>-<i>.
func createPlacingGang(t *testing.T, ns, name string, min int) {
	t.Helper()
	createPodGroup(t, ns, name, int32(min))
	pods := gangPods(ns, name, min, 1)
	holdLast(t, ns, ns, pods)
	createPods(t, pods...)
	waitEvent(t, ns, "Preempting event on PodGroup "+name, func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "PodGroup" && e.Regarding.Name == name && e.Reason == "Preempting"
	})
	// The placed members wait at Permit; nothing of the gang binds.
	holdBoundCounts(t, ns, map[string]int{}, 3*time.Second)
}

// waitParked waits until a pod of gang group is turned away because another
// gang is being placed.
func waitParked(t *testing.T, ns, group string) {
	t.Helper()
	waitEvent(t, ns, fmt.Sprintf("FailedScheduling on a pod of %s saying it waits for another gang", group), func(e eventsv1.Event) bool {
		return strings.HasPrefix(e.Regarding.Name, group+"-") && e.Reason == "FailedScheduling" && strings.Contains(e.Note, "which is being placed")
	})
}

// TestHeldGangDoesNotHangScheduler: a gang held back by its queue's card
// quota while other gangs' pods are parked behind a gang being placed must
// not stop the scheduler: admission (PreEnqueue) runs under the scheduling
// queue's lock and may not call back into the queue. Afterwards a pod that
// fits still binds, and the held gang says why.
func TestHeldGangDoesNotHangScheduler(t *testing.T) {
	ns := createGPUNamespace(t, "hang-a")
	createQueue(t, builder.MakeQueue("hang-c").Card(h200, 0, 1).Obj())
	nsC := createNamespaceInQueue(t, "hang-c", "hang-c")
	createNodes(t, gpuNodes("hang", 2, 5)...)
	startScheduler(t)

	createPlacingGang(t, ns, "a", 3)
	createPodGroup(t, ns, "b", 2)
	createPods(t, gangPods(ns, "b", 2, 1)...)
	waitParked(t, ns, "b")

	createPodGroup(t, nsC, "c", 4)
	createPods(t, gangPods(nsC, "c", 4, 1)...)
	waitGangEvent(t, nsC, "c", "GangHeldByCardQuota")

	createPods(t, builder.MakePod(ns, "single").Req("cpu", "100m").GPU(1).Obj())
	waitBound(t, ns, podsNamed("single"), within(promptly))
	holdBoundCounts(t, nsC, map[string]int{}, holdWindow)
}

// TestMinMemberLowered: members waiting at Permit bind as soon as a lowered
// minMember is met, not when their wait runs out.
func TestMinMemberLowered(t *testing.T) {
	ns := createGPUNamespace(t, "gang-lower")
	createNodes(t, gpuNodes("lower", 1, 4)...)
	startScheduler(t)

	createPlacingGang(t, ns, "a", 3)
	patchMinMember(t, ns, "a", 2)
	waitBound(t, ns, podsNamed("a-0", "a-1"), within(promptly))
	holdBoundCounts(t, ns, map[string]int{"a": 2}, holdWindow)
}

// TestGangBeingPlacedChanges: gang a has two members waiting at Permit for
// its third, held back, and gang b is parked behind it. When a can no longer
// complete, its waiting members give back their nodes at once (not when
// their Permit wait runs out), a binds nothing alone, and b goes ahead.
func TestGangBeingPlacedChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, ns string)
	}{
		{"members deleted below min", func(t *testing.T, ns string) { deletePod(t, ns, "a-2") }},
		{"a waiting member deleted", func(t *testing.T, ns string) { deletePod(t, ns, "a-0") }},
		{"its PodGroup deleted", func(t *testing.T, ns string) {
			if err := podGroups().SchedulingV1alpha1().PodGroups(ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := createGPUNamespace(t, fmt.Sprintf("gang-change-%d", i))
			createNodes(t, gpuNodes(fmt.Sprintf("change-%d", i), 1, 4)...)
			startScheduler(t)

			createPlacingGang(t, ns, "a", 3)
			createPodGroup(t, ns, "b", 2)
			createPods(t, gangPods(ns, "b", 2, 1)...)
			waitParked(t, ns, "b")

			tc.change(t, ns)
			waitBound(t, ns, podsNamed("b-0", "b-1"), within(promptly))
			holdBoundCounts(t, ns, map[string]int{"b": 2}, holdWindow)
		})
	}
}

// TestGangSplitAcrossQueuesOrSchedulers: a gang whose pods resolve to
// different queues, or whose pods are split between Cardinal and another
// scheduler, cannot be admitted as one: nothing of it binds, and its
// PodGroup gets an event that says what to fix.
func TestGangSplitAcrossQueuesOrSchedulers(t *testing.T) {
	ns := createNamespace(t, "gang-split")
	createQueue(t, builder.MakeQueue("split-a").Obj())
	createQueue(t, builder.MakeQueue("split-b").Obj())
	createNodes(t, builder.MakeNode("split-0").Obj())
	startScheduler(t)

	createPodGroup(t, ns, "mixed", 3)
	for i, q := range []string{"split-a", "split-a", "split-b"} {
		createPods(t, builder.MakePod(ns, fmt.Sprintf("mixed-%d", i)).Label("scheduling.x-k8s.io/pod-group", "mixed").
			Label(v1alpha1.QueueLabel, q).Req("cpu", "100m").Obj())
	}
	createPodGroup(t, ns, "split", 3)
	for i, sched := range []string{builder.SchedulerName, builder.SchedulerName, "default-scheduler"} {
		createPods(t, builder.MakePod(ns, fmt.Sprintf("split-%d", i)).Label("scheduling.x-k8s.io/pod-group", "split").
			Label(v1alpha1.QueueLabel, "split-a").SchedulerName(sched).Req("cpu", "100m").Obj())
	}
	waitEvent(t, ns, "an event on PodGroup mixed naming both queues", func(e eventsv1.Event) bool {
		return e.Regarding.Name == "mixed" && e.Type == corev1.EventTypeWarning &&
			strings.Contains(e.Note, "split-a") && strings.Contains(e.Note, "split-b") && strings.Contains(e.Note, v1alpha1.QueueLabel)
	})
	waitEvent(t, ns, "an event on PodGroup split naming the other scheduler", func(e eventsv1.Event) bool {
		return e.Regarding.Name == "split" && e.Type == corev1.EventTypeWarning &&
			strings.Contains(e.Note, "split-2") && strings.Contains(e.Note, "default-scheduler")
	})
	holdBoundCounts(t, ns, map[string]int{}, holdWindow)
}

func patchMinMember(t *testing.T, ns, name string, min int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"minMember":%d}}`, min)
	if _, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
}

// TestGatedMemberHoldsNobody: a gang whose min needs a member that
// kube-scheduler holds before Cardinal sees it (behind a scheduling gate,
// or naming a ResourceClaim that does not exist) is not complete, however
// long that lasts: nothing of it is placed, it is not the gang being
// placed, and it keeps nobody waiting: another team's gang, its elastic
// pod too, binds at once. Once the member can be tried (its gate lifted,
// or a replacement without the claim), the gang binds whole.
func TestGatedMemberHoldsNobody(t *testing.T) {
	tests := []struct {
		name   string
		hold   func(p *corev1.Pod)
		reason string // in a's waiting reason while held; "" for none
		lift   func(t *testing.T, ns string)
	}{
		{"scheduling gate",
			func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}} },
			"(1 more behind scheduling gates)",
			func(t *testing.T, ns string) { ungate(t, ns, "a-2") }},
		{"ResourceClaim that does not exist",
			func(p *corev1.Pod) {
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("not-made")}}
			},
			"",
			func(t *testing.T, ns string) {
				deletePod(t, ns, "a-2")
				createPods(t, gangPod(ns, "a", 2, 1))
			}},
		{"ResourceClaim made later",
			func(p *corev1.Pod) {
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("made-later")}}
			},
			"",
			func(t *testing.T, ns string) {
				claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "made-later"}}
				if _, err := env.kube.ResourceV1().ResourceClaims(ns).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := createGPUNamespace(t, fmt.Sprintf("gated-a-%d", i))
			nsB := createGPUNamespace(t, fmt.Sprintf("gated-b-%d", i))
			createNodes(t, gpuNodes(fmt.Sprintf("gated-%d", i), 1, 6)...)
			startScheduler(t)

			createPodGroup(t, ns, "a", 3)
			a := gangPods(ns, "a", 3, 1)
			tc.hold(a[2])
			createPods(t, a...)
			if tc.reason != "" {
				waitWaitingReason(t, ns, "a", tc.reason)
			}

			createPodGroup(t, nsB, "b", 2)
			createPods(t, gangPods(nsB, "b", 3, 1)...)
			waitBound(t, nsB, podsNamed("b-0", "b-1", "b-2"), within(promptly))
			holdBoundCounts(t, ns, map[string]int{}, 3*time.Second)

			tc.lift(t, ns)
			waitBound(t, ns, podsNamed("a-0", "a-1", "a-2"), within(promptly))
		})
	}
}

// ungate lifts a pod's scheduling gates.
func ungate(t *testing.T, ns, name string) {
	t.Helper()
	p, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.SchedulingGates = nil
	if _, err := env.kube.CoreV1().Pods(ns).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
