package integration

import (
	"time"

	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/test/builder"
)

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
	bound := waitBound(t, ns, boundCount(3)).names()
	holdBoundAtMost(t, ns, 3)
	waitPodEvent(t, ns, pendingPod(t, ns), "queue cap-h200 has insufficient NVIDIA-H200 quota: requested 1, would use 4, capability 3")
	waitQueueCards(t, "cap-h200", map[string]int32{h200: 3})

	if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), bound[0], metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	bound = waitBound(t, ns, boundCount(3)).names()
	holdBoundAtMost(t, ns, 3)

	// A pod that completes gives its card back too: the last one binds.
	done, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), bound[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done.Status.Phase = corev1.PodSucceeded
	if _, err := env.kube.CoreV1().Pods(ns).UpdateStatus(context.Background(), done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, boundCount(4)).names() // the completed pod keeps its node name
	holdFor(t, holdWindow, func() error {
		if running := len(boundPods(t, ns)) - 1; running > 3 {
			return fmt.Errorf("%d pods hold NVIDIA-H200 cards, more than the capability 3", running)
		}
		return nil
	})
	waitQueueCards(t, "cap-h200", map[string]int32{h200: 3})
}

// TestNonPreemptibleCardsOnlyGuarantee: non-preemptible pods may use only
// the queue's card guarantee, preemptible ones may borrow up to the
// capability (SPEC §3.5, §4.2).
func TestNonPreemptibleCardsOnlyGuarantee(t *testing.T) {
	createQueue(t, builder.MakeQueue("np-cards").Card(h200, 1, 3).Obj())
	ns := createNamespaceInQueue(t, "card-nonpre", "np-cards")
	createNodes(t, gpuNodes("npc", 1, 4)...)
	startScheduler(t)

	np := func(name string) *corev1.Pod {
		return builder.MakePod(ns, name).Label(v1alpha1.PreemptibilityLabel, v1alpha1.NonPreemptible).GPU(1).CardName(h200).Obj()
	}
	createPods(t, np("np-0"), np("np-1"))
	waitBound(t, ns, podsNamed("np-0"))
	waitPodEvent(t, ns, "np-1", "queue np-cards: non-preemptible pods may use only its guarantee of NVIDIA-H200: requested 1, would use 2, guarantee 1")
	neverBound(t, ns, "np-1")

	createPods(t, builder.MakePod(ns, "borrow").Label(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible).GPU(2).CardName(h200).Obj())
	waitBound(t, ns, podsNamed("borrow"))
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
	nodes := waitBound(t, ns, podsNamed("p-0", "p-1", "p-2"))
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
	if got := waitBound(t, ns, podsNamed("p-0"))["p-0"]; got != "pref-4090" {
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
	waitBound(t, ns, boundCount(4))
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
	waitBound(t, ns, podsNamed("volcano"))
	neverBound(t, ns, "mixed", "bad")
}

// TestCardRoomFreedByAnotherQueue: a pod refused because the only node of
// its model has no card left, though its queue has quota, must not bind
// while the card is held, and binds once a pod of another queue gives the
// card back, woken by that pod going rather than by the scheduler's
// periodic retry of unschedulable pods (SPEC §4.2, §3.1).
func TestCardRoomFreedByAnotherQueue(t *testing.T) {
	createQueue(t, builder.MakeQueue("room-a").Card(rtx, 1, 1).Obj())
	createQueue(t, builder.MakeQueue("room-b").Card(rtx, 1, 1).Obj())
	nsA := createNamespaceInQueue(t, "card-room-a", "room-a")
	nsB := createNamespaceInQueue(t, "card-room-b", "room-b")
	createNodes(t, builder.MakeNode("room-4090").GPU(rtx, 1).Obj())
	startScheduler(t)

	createPods(t, cardPods(nsB, "holder", rtx, 1)...)
	waitBound(t, nsB, podsNamed("holder-0"))
	createPods(t, cardPods(nsA, "waiter", rtx, 1)...)
	waitPodEvent(t, nsA, "waiter-0", "Insufficient nvidia.com/gpu")
	neverBound(t, nsA, "waiter-0")

	deletePod(t, nsB, "holder-0")
	if got := waitBound(t, nsA, podsNamed("waiter-0"), within(time.Minute))["waiter-0"]; got != "room-4090" {
		t.Errorf("waiter-0 bound to %q, want room-4090", got)
	}
}

// TestRoomOfTwoCardResources: a pod that asks for two card resources, whole
// cards and MIG slices on a node that has both, is refused while one of
// them has no room, with the reason naming that resource, never binds
// while it is held, and binds once it is given back, charged both models
// (SPEC §4.1, §4.2).
func TestRoomOfTwoCardResources(t *testing.T) {
	createQueue(t, builder.MakeQueue("two-res").Card(h200, 4, 4).Card(mig, 8, 8).Obj())
	ns := createNamespaceInQueue(t, "card-two-res", "two-res")
	createNodes(t, builder.MakeNode("two-res-0").GPU(h200, 2).Res(migRes, "2").Label("nvidia.com/mig.strategy", "mixed").Obj())
	startScheduler(t)

	createPods(t, builder.MakePod(ns, "slices").Extended(migRes, 2).Obj())
	waitBound(t, ns, podsNamed("slices"))
	createPods(t,
		builder.MakePod(ns, "both").GPU(1).Extended(migRes, 1).Obj(),
		builder.MakePod(ns, "too-many").GPU(1).Extended(migRes, 3).Obj(),
	)
	waitPodEvent(t, ns, "both", "Insufficient nvidia.com/mig-1g.18gb")
	waitPodEvent(t, ns, "too-many", "Insufficient nvidia.com/mig-1g.18gb")
	neverBound(t, ns, "both", "too-many")

	deletePod(t, ns, "slices")
	if got := waitBound(t, ns, podsNamed("both"))["both"]; got != "two-res-0" {
		t.Errorf("both bound to %q, want two-res-0", got)
	}
	waitQueueCards(t, "two-res", map[string]int32{h200: 1, mig: 1})
	neverBound(t, ns, "too-many")
}

// TestCardPreferenceMissed: a "4090|4090-D" pod that the 4090 has cards
// for but cannot take for another reason (its host port is in use there)
// is tried there first, then on every node, and binds on the 4090-D; the
// lower-priority pod holding the port is not evicted. A gang whose member
// misses so is not failed for it: it binds with no GangUnschedulable
// (SPEC §4.3, §2.2).
func TestCardPreferenceMissed(t *testing.T) {
	ensurePriorityClasses(t)
	createQueue(t, builder.MakeQueue("miss").Card(rtx, 8, 8).Card(rtxD, 8, 8).Obj())
	ns := createNamespaceInQueue(t, "card-miss", "miss")
	createNodes(t,
		builder.MakeNode("miss-4090").GPU(rtx, 4).Obj(),
		builder.MakeNode("miss-4090d").GPU(rtxD, 4).Obj(),
	)
	startScheduler(t)
	hostPort := func(p *corev1.Pod, ports ...int32) *corev1.Pod {
		for _, port := range ports {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
		}
		return p
	}

	createPods(t, prioritized(lowPriority, hostPort(cardPods(ns, "holder", rtx, 1)[0], 7000, 7001))...)
	waitBound(t, ns, podsNamed("holder-0"))

	createPods(t, prioritized(highPriority, hostPort(cardPods(ns, "p", rtx+"|"+rtxD, 1)[0], 7000))...)
	if got := waitBound(t, ns, podsNamed("p-0"))["p-0"]; got != "miss-4090d" {
		t.Errorf("p-0 bound to %s, want miss-4090d, the only node with its port free", got)
	}
	waitPodEvent(t, ns, "p-0", "tried first on the 1 node of NVIDIA-GeForce-RTX-4090")

	createPodGroup(t, ns, "g", 2)
	g := gangPods(ns, "g", 2, 1)
	for i, p := range g {
		p.Annotations[v1alpha1.CardNameAnnotation] = rtx + "|" + rtxD
		hostPort(p, 7001+int32(i)) // g-0's port is in use on the 4090, g-1's is free on both
	}
	createPods(t, prioritized(highPriority, g...)...)
	nodes := waitBound(t, ns, podsNamed("g-0", "g-1"))
	if nodes["g-0"] != "miss-4090d" || nodes["g-1"] != "miss-4090" {
		t.Errorf("gang bound to %v, want g-0 on miss-4090d and g-1 on miss-4090", nodes)
	}

	holdFor(t, holdWindow, func() error {
		holder, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), "holder-0", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the pod holding the port: %v", err)
		}
		if holder.DeletionTimestamp != nil {
			return fmt.Errorf("the pod holding the port is being evicted")
		}
		return nil
	})
	for _, reason := range []string{"Preempted", "GangUnschedulable"} {
		if n := countEvents(t, ns, reason); n > 0 {
			t.Errorf("%d %s events, want none", n, reason)
		}
	}
}
