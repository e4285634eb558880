package state

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/quota"
)

// The room a preemption keeps for its members (SPEC §5.8): who holds it on
// which node, how a gang's pods use it, give it back and hand it to each
// other, and the nominations in kube-scheduler that go with it.

// Claim is room kept on a node for a preemptor's member (SPEC §5.8): other
// pods may not take it while the member waits for its victims to go.
type Claim struct {
	// Key is the preemptor's (Preemptor.Key); its own pods may use the room.
	Key string
	// Queue is the preemptor's queue when the room was made.
	Queue   string
	Pod     types.UID
	Node    string
	Request quota.Resources
}

// useClaimLocked notes that pod is placed on node: its own claim is done,
// or, for another pod of the same preemptor (any pod of a gang may be one
// of its min), a claim of the preemptor's on that node, whose room it took.
// Only room made for the queue the pod is placed in is its to take
// (KeptFrom): a member moved to another queue leaves its gang's room kept.
func (s *State) useClaimLocked(pod *corev1.Pod, node string) {
	pr := s.preemptions.of(s.PreemptorKeyOf(pod))
	e := s.books.pods[pod.UID]
	if pr == nil || e == nil {
		return
	}
	// Its own room on node, else a sibling's there, else its own elsewhere
	// (placed on another node, it needs that room no more).
	c, ok := pr.claims[pod.UID]
	if ok && c.Queue != e.Queue {
		return
	}
	if !ok || c.Node != node {
		for _, other := range pr.claims {
			if other.Node == node && other.Queue == e.Queue {
				c, ok = other, true
				break
			}
		}
	}
	if !ok {
		return
	}
	pr.used[pod.UID] = c
	s.preemptions.claimDone(c.Pod)
	if c.Pod == pod.UID {
		return
	}
	// pod took a sibling's room. A member that had room of its own
	// elsewhere hands it to that sibling; either way the sibling's
	// nomination on node is stale: kube-scheduler would go on counting it
	// there, on top of pod, and the gang's last members would each find
	// the node full of the other's nomination until the room expired.
	s.preemptions.handOver(pr, pod.UID, c.Pod)
	var stale []*corev1.Pod
	for _, m := range pr.members {
		if m.UID == c.Pod {
			stale = append(stale, m)
			s.preemptions.unnominated[m.UID] = struct{}{}
		}
	}
	s.out.push(func(fw Framework) { unnominate(fw, stale) })
	s.activateLocked(slices.Values(pr.members))
}

// leftPreemptionQueueLocked gives up the room a preemption kept once the
// pending members of its preemptor have all left the queue it was for, e
// last (moved within its gang): the room is kept from them (KeptFrom), and
// while the preemption is under way their gang may not preempt in its new
// queue (PreemptorOf). While victims are still going the preemption stands
// (they count as going, and no second round starts); the room is given up
// when they are gone (victimGoneLocked).
func (s *State) leftPreemptionQueueLocked(e *podEntry) {
	pr := s.preemptions.of(PreemptorKeyFor(e.Gang, e.pod))
	if pr == nil || pr.victims.Len() > 0 || !s.leftQueueLocked(pr) {
		return
	}
	s.endPreemptionLocked(pr, true)
	s.activateLocked(slices.Values(pr.members))
}

// leftQueueLocked tells whether pr's members have all left the queue it
// was for: none that is pending is in it, and one that is not moved.
func (s *State) leftQueueLocked(pr *preemption) bool {
	moved := false
	for _, m := range pr.members {
		e := s.books.pods[m.UID]
		if e == nil || e.placed() {
			continue
		}
		if e.Queue == pr.queue {
			return false
		}
		moved = true
	}
	return moved
}

// unuseClaimLocked keeps the room again that pod took from its
// preemptor's claims, when pod gives it back (unreserved) while the
// preemption is under way.
func (s *State) unuseClaimLocked(pod *corev1.Pod) {
	pr := s.preemptions.of(s.PreemptorKeyOf(pod))
	if pr == nil {
		return
	}
	c, ok := pr.used[pod.UID]
	if !ok {
		return
	}
	delete(pr.used, pod.UID)
	// The room was a sibling's: it goes back to that sibling unless the
	// sibling is placed, gone, or has other room now (pod's own, handed
	// over), in which case pod keeps it as its own.
	if c.Pod != pod.UID {
		_, has := s.preemptions.claimOf[c.Pod]
		if e := s.books.pods[c.Pod]; e == nil || e.placed() || has {
			c.Pod = pod.UID
		}
	}
	if _, has := s.preemptions.claimOf[c.Pod]; !has {
		s.preemptions.claim(pr, c)
	}
}

// renominatedLocked clears again the nomination of a pod whose room a
// sibling took, when an older patch that nominated it lands after the one
// that cleared it: kube-scheduler would count it on that node again.
func (s *State) renominatedLocked(pod *corev1.Pod) {
	if pod.Status.NominatedNodeName == "" {
		return
	}
	if _, ok := s.preemptions.unnominated[pod.UID]; !ok {
		return
	}
	if e := s.books.pods[pod.UID]; e != nil && e.placed() {
		return // placed: kube-scheduler may nominate it where it waits at Permit
	}
	if key, ok := s.preemptions.claimOf[pod.UID]; ok {
		if pr := s.preemptions.underWay[key]; pr != nil && pr.claims[pod.UID].Node == pod.Status.NominatedNodeName {
			return // where its room is: nominated anew by a later preemption
		}
	}
	s.out.push(func(fw Framework) { unnominate(fw, []*corev1.Pod{pod}) })
}

// nominator is what clearing a nomination needs of the framework handle.
type nominator interface {
	DeleteNominatedPodIfExists(pod *corev1.Pod)
	ClientSet() kubernetes.Interface
}

// unnominate clears pods' nominated nodes, in the scheduler and in their
// status (which the scheduler reads back on any update of the pod).
func unnominate(fw Framework, pods []*corev1.Pod) {
	n, ok := fw.(nominator)
	if !ok {
		return
	}
	for _, pod := range pods {
		n.DeleteNominatedPodIfExists(pod)
	}
	go func() {
		ctx := context.Background()
		for _, pod := range pods {
			// The UID makes it fail rather than touch a pod of the same
			// name created since.
			patch := []byte(fmt.Sprintf(`{"metadata":{"uid":%q},"status":{"nominatedNodeName":null}}`, pod.UID))
			if _, err := n.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
				klog.FromContext(ctx).V(2).Info("Clearing a nomination", "pod", klog.KObj(pod), "err", err)
			}
		}
	}()
}

// ClaimsOn returns the room kept on a node for preemptors' members. It
// takes no lock: Filter calls it for every node, and while no room is kept
// anywhere (almost always) it reads one counter.
func (s *State) ClaimsOn(node string) []Claim { return s.preemptions.on(node) }

// KeptFrom is the room kept on a node from a pod whose own claims are kept
// under own (State.PreemptorKeyOf), checked in queue: what the claims there
// of other preemptors keep for members not yet on the node (nominated
// members the framework put on it for a Filter count once). Room made for
// the pod's gang in another queue is kept from it too: a member moved to
// another queue must not take, as that queue's, room its gang reclaimed
// for the first. nil when nothing is kept from it.
func KeptFrom(own, queue string, nodeInfo fwk.NodeInfo, claims []Claim) quota.Resources {
	if len(claims) == 0 {
		return nil
	}
	var kept quota.Resources
	var on map[types.UID]bool
	for _, c := range claims {
		if c.Key == own && c.Queue == queue {
			continue
		}
		if on == nil {
			on = map[types.UID]bool{}
			for _, pi := range nodeInfo.GetPods() {
				on[pi.GetPod().UID] = true
			}
		}
		if on[c.Pod] {
			continue
		}
		if kept == nil {
			kept = quota.Resources{}
		}
		kept.Add(c.Request)
	}
	return kept
}
