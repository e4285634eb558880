package state

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// A pod with card-name alternatives is tried first on the nodes of its
// first alternative that has quota and looks to have room
// (CardinalCardQuota's PreFilter), which is where the preference puts it
// (SPEC §4.3), and where a cycle then looks at fewer nodes. If none of
// them fits it after all (its pod affinity, a port, a volume), the cycle
// is no failure of the pod or its gang: nothing is preempted, no gang
// backs off; the first Cardinal PostFilter ends the cycle, the pod is
// woken to be tried on every node, and neither it nor its gang's other
// pods, those that join later too, are narrowed again until the gang's
// min is bound.

// rewakeAfter is how long after a miss the pod is woken a second time.
// The first wake-up most often reaches kube-scheduler's queue while the
// pod is still in its failed cycle, which the queue answers by putting it
// back after its backoff (a second at least, ten after many failures); the
// second finds it back in the queue and moves it to be tried at once.
const rewakeAfter = 100 * time.Millisecond

// AfterNarrowingMiss, called first by every Cardinal PostFilter with the
// nodes' statuses, returns the status that ends the PostFilters when the
// cycle had narrowed its pod's nodes and filtered them: the pod (and its
// gang's pods, until the gang's min is bound) is not narrowed again, and
// it is woken to be tried on every node. nil otherwise, and the
// PostFilter goes on as usual: a cycle that a PreFilter refused filtered
// no node, and narrowing kept the pod from nothing. A second call in the same cycle returns the same status.
func (s *State) AfterNarrowingMiss(cs fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) *fwk.Status {
	d, err := cs.Read(narrowedKey)
	// A reader that cannot say is taken to have filtered: the pod then
	// loses one cycle, not a chance to preempt, as it is tried on every
	// node next.
	if ran, known := FilterRan(statuses); err != nil || known && !ran {
		return nil
	}
	n, ok := d.(narrowing)
	if !ok {
		return nil
	}
	s.mu.Lock()
	// Recorded here if the state's informer has not delivered it yet, so
	// that the miss is remembered and the pod woken.
	if e, recorded := s.ensurePodLocked(pod); recorded && !s.narrowMissedLocked(e) {
		if g := s.books.gangs[e.Gang]; e.Gang != "" && g != nil && g.group != nil && g.minBound != boundKey(g.group) {
			// Its siblings, those to come too, are most likely kept from
			// the same nodes alike (one template): they are tried on
			// every node too, until the min they wait for is bound. A
			// pod that misses once the min is bound (an elastic pod, a
			// replacement) is not narrowed again itself.
			g.narrowMissed = true
		} else {
			e.narrowMissed = true
		}
		s.rewakeLocked(pod)
	}
	s.mu.Unlock()
	nodes := fmt.Sprintf("%d nodes", n.nodes)
	if n.nodes == 1 {
		nodes = "1 node"
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
		"tried first on the %s of %s that looked to have room for it (its first card-name alternative with quota and such nodes): none fits; it is tried again on every node",
		nodes, n.model))
}

// narrowMissedLocked tells whether a cycle narrowed to one model missed
// the pod, or a pod of its gang, before.
func (s *State) narrowMissedLocked(e *podEntry) bool {
	if g := s.books.gangs[e.Gang]; e.Gang != "" && g != nil && g.narrowMissed {
		return true
	}
	return e.narrowMissed
}

// rewakeLocked wakes pod now and again after rewakeAfter.
func (s *State) rewakeLocked(pod *corev1.Pod) {
	s.activateLocked(slices.Values([]*corev1.Pod{pod}))
	s.clock.AfterFunc(rewakeAfter, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e := s.books.pods[pod.UID]; e != nil && !e.placed() {
			s.activateLocked(slices.Values([]*corev1.Pod{e.pod}))
		}
	})
}

// FilterRan tells whether the cycle's Filter ran on some node (a
// PreFilter's refusal leaves every node with the one status it gave, none
// of their own), and whether the reader could say: each caller decides
// what a reader that cannot say means for it.
func FilterRan(statuses fwk.NodeToStatusReader) (ran, known bool) {
	if m, ok := statuses.(interface{ Len() int }); ok {
		return m.Len() > 0, true
	}
	return false, false
}
