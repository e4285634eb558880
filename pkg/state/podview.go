package state

import corev1 "k8s.io/api/core/v1"

// PodView is a copy of what the state knows of one pod: the one view of a
// pod every reader gets. Prospect fills it for a pod judged for placement
// (what placing it would charge), ChargeOf for what a pod is charged now,
// PlacedIn for the placed pods preemption may choose from.
type PodView struct {
	// Facts are as derived from the pod and the objects around it; for a
	// placed pod, Queue is where it was placed, and PlacedIn gives the
	// Preemptibility it was booked with (SPEC §3.7).
	Facts
	Pod *corev1.Pod
	// Node is where the pod is placed (reserved or bound); "" while pending.
	Node string
	// Bound is false for a pod this scheduler reserved and has not bound.
	Bound bool
	// Cards is what a placed pod is charged in cards of each model
	// (read only: it is shared with the state).
	Cards map[string]int64
	// NonPreemptible: the pod is charged as non-preemptible work, or, seen
	// by Prospect, would be if it were placed now (SPEC §3.5).
	NonPreemptible bool
	// Elastic: placed beyond its gang's min, by rank (pkg/gang); Rank is
	// its place among its gang's placed pods, 0 the oldest (PlacedIn).
	Elastic bool
	Rank    int
	// GangEvicted (PlacedIn) is how many preemptions have evicted pods of
	// its gang since this process has known the gang.
	GangEvicted int
	// Displaced (Prospect), when not nil, is the min member of the pod's
	// semi-preemptible gang that placing it would push out to elastic: it
	// leaves the queue's non-preemptible use as the pod enters it.
	Displaced *PodView
	// NarrowMissed (Prospect): the pod, or another pod of its gang since
	// the gang's min was last bound, fit none of the nodes its cycle was
	// narrowed to: it is not narrowed (narrow.go).
	NarrowMissed bool
}

// Placed tells whether the pod is placed (reserved or bound).
func (v PodView) Placed() bool { return v.Node != "" }

// view is a copy of what the state knows of a pod, as charged now.
func (e *podEntry) view() PodView {
	v := PodView{
		Facts: e.Facts, Pod: e.pod, Node: e.node, Bound: e.bound, Cards: e.cards,
		NonPreemptible: e.nonPreemptible(), Elastic: e.elastic,
	}
	if e.placed() {
		v.Preemptibility = e.bookedPreemptibility()
	}
	return v
}
