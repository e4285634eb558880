package state

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
)

// gangEntry is what the state knows of one gang.
type gangEntry struct {
	key gang.Key
	// group is the PodGroup as the informer last delivered it; nil until seen.
	group *schedv1alpha1.PodGroup
	// groupUID is the UID of the last PodGroup seen, kept once it is gone.
	groupUID types.UID
	// members are the gang's live pods of Cardinal's profile.
	members map[types.UID]*podEntry
	// gated counts members kube-scheduler holds at PreEnqueue (isGated):
	// they do not count toward the gang's min (triable).
	gated int
	// foreign are live pods that join the gang but name another scheduler:
	// pod name -> scheduler name.
	foreign map[types.UID]string
	// placed are the members placed (reserved or bound), in rank order
	// (gang.Less): the first min are min members, the rest elastic.
	placed []*podEntry
	// reserved counts placed members not yet bound: waiting at Permit or binding.
	reserved int
	// queues counts members per queue they resolve to.
	queues map[string]int
	// attempt numbers the gang's tries at placing its min; a failure ends one.
	attempt      uint64
	backoffUntil time.Time
	lastFailure  string
	// gaveUp counts its attempts in a row that ended with a placed member
	// giving up its reservation (a Permit wait run out, a failed bind):
	// each doubles the next backoff (failLocked), so a gang whose min
	// waits for a member that does not come holds the one gang being
	// placed less and less often. Its min bound, or a failure of another
	// kind, starts it again; a PodGroup made anew does not (feed.go).
	gaveUp int
	// evicted counts the preemptions that evicted pods of it (Preempted):
	// of victims otherwise alike, one evicted less often goes first, so
	// reclaim does not take the same gang each time it is placed again.
	evicted int
	// waits is why its pods were last turned away for another gang (one
	// being placed, one that needs its min); nil once one was let through,
	// or turned away for the gang's own state (incomplete, backing off),
	// or the gang was held.
	waits refusal.Refusal
	// held are the admission checks holding the gang back: holder -> why.
	held map[string]refusal.Refusal
	// admissible: it has its PodGroup and minMember pods, all of one queue
	// and scheduler; its pods are woken when it becomes so.
	admissible bool
	// minBound is the UID of the PodGroup whose min was seen bound (its
	// wait observed once, gangstatus.go); "" while it waits for its min.
	minBound types.UID
	// waitSince, when set, is when it began to wait anew after losing every
	// placed pod; before that it waits since its PodGroup's creation.
	waitSince time.Time
	// narrowMissed: a pod of the gang fit none of the nodes its cycle was
	// narrowed to while the gang waited for its min; the gang's pods,
	// those that join later too, are tried on every node until its min is
	// bound (narrow.go).
	narrowMissed bool
	// belowMinSince is when the gang was found bound below its min, its
	// terminating members counted as bound; zero while it is not
	// (stale.go).
	belowMinSince time.Time
	// terminating counts its members being deleted: out of its ranks, but
	// still holding their nodes (terminating.go).
	terminating int
}

// min is the number of placed pods below which the gang waits at Permit.
// A gang whose PodGroup is gone is no gang: every pod of it counts on its
// own, and none is elastic.
func (g *gangEntry) min() int {
	if g.group == nil {
		return math.MaxInt32
	}
	return int(g.group.Spec.MinMember)
}

func (g *gangEntry) needsMin() bool { return g.group != nil && len(g.placed) < g.min() }

// triable counts the members kube-scheduler may try: those it holds at
// PreEnqueue (isGated) are not. A gang is complete,
// admitted and waits for its min only on these, so a member held for as
// long as its owner likes never lets its gang reserve nodes for it, hold
// the one gang being placed, or keep other gangs' elastic pods waiting
// (SPEC §2.3, §2.4).
func (g *gangEntry) triable() int { return len(g.members) - g.gated }

// isGated tells a pending pod that kube-scheduler holds at PreEnqueue,
// never trying it, whatever Cardinal's PreEnqueue says (kube-scheduler runs
// PreEnqueue plugins in no fixed order): one behind scheduling gates, or
// with a resource claim that DynamicResources finds missing
// (resourceclaims.go). A tool's read-only copy of the state reads no
// claims: there only gates count.
func (s *State) isGated(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" {
		return false
	}
	return len(pod.Spec.SchedulingGates) > 0 || s.claimsMissing(pod)
}

func (g *gangEntry) countQueue(q string, n int) {
	if g.queues[q] += n; g.queues[q] <= 0 {
		delete(g.queues, q)
	}
}

// empty tells whether nothing is left of a gang to remember.
func (g *gangEntry) empty() bool {
	return g.group == nil && len(g.members) == 0 && len(g.foreign) == 0 && len(g.placed) == 0 && g.terminating == 0
}

func (s *State) gangLocked(k gang.Key) *gangEntry {
	g := s.books.gangs[k]
	if g == nil {
		g = &gangEntry{key: k, members: map[types.UID]*podEntry{}, foreign: map[types.UID]string{}, queues: map[string]int{}, held: map[string]refusal.Refusal{}}
		s.books.gangs[k] = g
	}
	return g
}

// joinGangLocked adds a pod to its gang's members (and, if placed, its placed pods).
func (s *State) joinGangLocked(e *podEntry) {
	if e.Gang == "" {
		return
	}
	g := s.gangLocked(e.Gang)
	g.members[e.pod.UID] = e
	g.countQueue(e.Queue, 1)
	if e.gated = s.isGated(e.pod); e.gated {
		g.gated++
	}
	if e.placed() {
		s.insertPlacedLocked(g, e)
	}
	s.refreshGangLocked(g)
}

// leaveGangLocked takes a pod out of its gang.
func (s *State) leaveGangLocked(e *podEntry) {
	g := s.books.gangs[e.Gang]
	if g == nil {
		return
	}
	g.dropMember(e)
	if e.placed() {
		s.removePlacedLocked(g, e)
		e.elastic = false
	}
	s.refreshGangLocked(g)
}

// dropMember takes e out of g's members and their counts, if it is one.
func (g *gangEntry) dropMember(e *podEntry) {
	if _, ok := g.members[e.pod.UID]; !ok {
		return
	}
	delete(g.members, e.pod.UID)
	g.countQueue(e.Queue, -1)
	if e.gated {
		g.gated--
		e.gated = false
	}
}

// regateLocked counts a member toward its gang's min, or no longer, as
// kube-scheduler holds it now (its gates lifted, a claim it names made or
// deleted): the gang may be complete now, or no longer, and its PodGroup's
// waiting reason says so. O(1) when nothing changed.
func (s *State) regateLocked(e *podEntry) {
	g := s.books.gangs[e.Gang]
	if g == nil {
		return
	}
	if _, ok := g.members[e.pod.UID]; !ok {
		return
	}
	gated := s.isGated(e.pod)
	if gated == e.gated {
		return
	}
	e.gated = gated
	if gated {
		g.gated++
	} else {
		g.gated--
	}
	if gated && g.needsMin() && g.reserved > 0 && g.triable() < g.min() {
		// Held back by its owner (a gate added, a claim deleted) while its
		// gang's placed pods wait at Permit for it: they give back their
		// nodes now, not at the end of the Permit wait, and the gang backs
		// off as one whose member never came.
		g.gaveUp++
		s.failLocked(g, fmt.Sprintf("pod %s is held before scheduling (scheduling gates, or a resource claim missing): %d of its minMember %d pods can be scheduled",
			e.pod.Name, g.triable(), g.min()), true)
	}
	s.refreshGangLocked(g)
	// A pod the grouper grouped has no label, and no event of its own
	// reaches the status writer.
	s.noteGangLocked(g.key)
}

// insertPlacedLocked puts a placed pod among its gang's placed pods, in
// rank order, and gives it its role. A pod that ranks among the first min
// pushes the pod at the boundary out to elastic.
func (s *State) insertPlacedLocked(g *gangEntry, e *podEntry) {
	i := sort.Search(len(g.placed), func(i int) bool { return !gang.Less(g.placed[i].pod, e.pod) })
	g.placed = slices.Insert(g.placed, i, e)
	if !e.bound {
		g.reserved++
	}
	m := g.min()
	e.elastic = i >= m
	if i < m && len(g.placed) > m {
		s.setElasticLocked(g.placed[m], true)
	}
}

// removePlacedLocked takes a pod out of its gang's placed pods; a min
// member leaving promotes the first elastic pod to min member.
func (s *State) removePlacedLocked(g *gangEntry, e *podEntry) {
	i := slices.Index(g.placed, e)
	if i < 0 {
		return
	}
	g.placed = slices.Delete(g.placed, i, i+1)
	if !e.bound {
		g.reserved--
	}
	if m := g.min(); i < m && len(g.placed) >= m {
		s.setElasticLocked(g.placed[m-1], false)
	}
}

// setRolesLocked gives every placed pod of a gang its role anew, after its
// min changed.
func (s *State) setRolesLocked(g *gangEntry) {
	m := g.min()
	for i, e := range g.placed {
		s.setElasticLocked(e, i >= m)
	}
}

// setElasticLocked changes a placed pod's role, recharging it: a
// semi-preemptible gang's elastic pods are preemptible (SPEC §5.2).
func (s *State) setElasticLocked(e *podEntry, elastic bool) {
	if e.elastic == elastic {
		return
	}
	s.chargeLocked(e, -1)
	e.elastic = elastic
	s.chargeLocked(e, 1)
	s.warnKeptPreemptibleLocked(e)
	if elastic {
		// Its queue's elastic pods (which give way to mins) and, for a
		// semi-preemptible gang, its guarantee left to non-preemptible
		// work have grown.
		s.roomFreedLocked(e.Queue)
	}
}

// upsertForeignLocked records a pod of another scheduler that joins a gang,
// and forgets it when it leaves (finished, or relabelled out of the gang).
func (s *State) upsertForeignLocked(pod *corev1.Pod) {
	k, inGang := s.GangOf(pod)
	if old, known := s.books.foreign[pod.UID]; known && (old != k || isTerminal(pod)) {
		s.removeForeignLocked(pod)
	}
	if !inGang || isTerminal(pod) {
		return
	}
	g := s.gangLocked(k)
	if _, known := g.foreign[pod.UID]; !known {
		g.foreign[pod.UID] = pod.Name + " (" + pod.Spec.SchedulerName + ")"
		s.books.foreign[pod.UID] = k
		s.refreshGangLocked(g)
	}
}

func (s *State) removeForeignLocked(pod *corev1.Pod) {
	k, known := s.books.foreign[pod.UID]
	if !known {
		return
	}
	delete(s.books.foreign, pod.UID)
	if g := s.books.gangs[k]; g != nil {
		delete(g.foreign, pod.UID)
		s.refreshGangLocked(g)
	}
}

// isTerminal tells whether a pod is done with, as far as a gang's members
// go: finished, or being deleted. A placed pod being deleted still holds its
// node and charge until it is gone (terminating.go).
func isTerminal(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || finished(pod)
}

func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
