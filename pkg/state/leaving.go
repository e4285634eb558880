package state

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Pods still on a node in kube-scheduler's snapshot whose room is, or is
// about to be, free: preemption plans would otherwise count it twice.

// cacheLag is how long a placed pod is remembered after it is gone: the
// scheduler's cache and the state are fed by separate handlers of one
// informer, each at its own pace, and under a storm of events the cache
// may see a deletion well after the state.
const cacheLag = 10 * time.Second

// maxLeft bounds the pods remembered as gone.
const maxLeft = 8192

// Leaving is a pod on a node whose room is, or is about to be, free.
type Leaving struct {
	UID  types.UID
	Node string
	// Charged: the pod is still charged to its queue (a victim that has
	// not gone yet, SPEC §3.7); a pod gone is not.
	Charged bool
	// at is when a pod gone went.
	at time.Time
}

// leftLocked remembers that a placed pod is gone, and forgets those gone
// longer than cacheLag ago.
func (s *State) leftLocked(e *podEntry) {
	now := s.clock.Now()
	drop := 0
	for drop < len(s.books.left) && (now.Sub(s.books.left[drop].at) > cacheLag || len(s.books.left)-drop >= maxLeft) {
		drop++
	}
	s.books.left = append(s.books.left[drop:], Leaving{UID: e.pod.UID, Node: e.node, at: now})
}

// Leaving lists the pods whose room a plan may count as free on their
// nodes, if kube-scheduler's snapshot still holds them there: the victims
// of preemptions under way, whose room is kept for the preemptors' members
// (kube-scheduler counts those on the node as nominated pods), and pods
// gone within cacheLag. In O(those pods).
func (s *State) Leaving() []Leaving {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Leaving, 0, len(s.preemptions.victimOf)+len(s.books.left))
	for uid := range s.preemptions.victimOf {
		if e := s.books.pods[uid]; e != nil && e.placed() {
			out = append(out, Leaving{UID: uid, Node: e.node, Charged: true})
		}
	}
	return append(out, s.books.left...)
}
