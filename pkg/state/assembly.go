package state

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
)

// Why gangs cannot deadlock (SPEC §2.3): at most one gang is being
// assembled at a time. While gang A has members waiting at Permit below its
// min, min members of any other gang are turned away at PreFilter and
// parked; when A completes or gives up, the parked gang that comes first in
// queue order is woken. Only one gang can ever hold a partial reservation,
// so there is nobody to wait for in a cycle. A gang that cannot complete
// (a member fits nowhere, a Permit wait runs out, a bind fails, it loses
// members) gives back every reservation at once.

// assembly is where gangs stand in getting their min placed: the gang
// being assembled (at most one with a partial reservation, see above), the
// gangs whose min is not placed yet, and those bound below their min.
type assembly struct {
	// assembling are the gangs with members reserved below their min.
	assembling sets.Set[gang.Key]
	// awaitingMin are the gangs with their min of pods, not all placed.
	awaitingMin sets.Set[gang.Key]
	// belowMin are the gangs bound below their min (stale.go).
	belowMin sets.Set[gang.Key]
	// lastGangWake is when a parked gang was last woken.
	lastGangWake time.Time
}

func newAssembly() assembly {
	return assembly{assembling: sets.New[gang.Key](), awaitingMin: sets.New[gang.Key](), belowMin: sets.New[gang.Key]()}
}

// refresh files gang g anew by where it stands. It tells whether g was
// being assembled and is no more (the next parked gang may start), whether
// it waited for its min and does no more (elastic pods it kept waiting may
// go), and whether it waits for its min now and did not before (its own
// pods parked as elastic, beyond a min it has since lost, are its min
// members now).
func (a *assembly) refresh(g *gangEntry) (assembled, gotMin, lostMin bool) {
	k := g.key
	wasAssembling, wasAwaiting := a.assembling.Has(k), a.awaitingMin.Has(k)
	a.assembling.Delete(k)
	a.awaitingMin.Delete(k)
	if g.needsMin() && g.reserved > 0 {
		a.assembling.Insert(k)
	}
	if g.needsMin() && g.triable() >= g.min() {
		a.awaitingMin.Insert(k)
	}
	return wasAssembling && !a.assembling.Has(k), wasAwaiting && !a.awaitingMin.Has(k), !wasAwaiting && a.awaitingMin.Has(k)
}

// watchBelowMin files g as bound below its min since now, or not (stale.go).
func (a *assembly) watchBelowMin(g *gangEntry, below bool, now time.Time) {
	if !below {
		g.belowMinSince = time.Time{}
		a.belowMin.Delete(g.key)
		return
	}
	if g.belowMinSince.IsZero() {
		g.belowMinSince = now
		a.belowMin.Insert(g.key)
	}
}

// Start is the answer to a gang pod's PreFilter.
type Start struct {
	// Gang is the pod's gang; "" for a pod without one.
	Gang gang.Key
	// Elastic: the gang already has its min placed, so this pod adds
	// beyond it: it never preempts and passes Permit at once.
	Elastic bool
	// Missing, when the pod begins a new attempt at the gang's min (no
	// member is waiting at Permit), is how many more pods the min needs;
	// Pending are the gang's pods not placed, to check there is room.
	Missing int
	Pending []*corev1.Pod
}

// TryStart decides whether a pod of a gang may be tried now (SPEC
// §2.1-§2.4): the gang must have its PodGroup and min members and not be
// backing off; a min member waits while another gang is being placed, and
// an elastic pod waits while another gang still needs its min. A pod that
// must wait is parked, to be woken when that changes; the check and the
// parking happen under one lock, so no wake-up is missed.
func (s *State) TryStart(pod *corev1.Pod) (Start, *fwk.Status) {
	k, ok := s.GangOf(pod)
	if !ok {
		return Start{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, recorded := s.ensurePodLocked(pod)
	if !recorded {
		return Start{}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("pod %s/%s was deleted", pod.Namespace, pod.Name))
	}
	g := s.books.gangs[k]
	if g != nil {
		g.waits = nil // set again below if another gang stands in its way
	}
	if st := s.gangIncompleteLocked(g, k); st != nil {
		return Start{}, st
	}
	now := s.clock.Now()
	if now.Before(g.backoffUntil) {
		return Start{}, refusal.Status(fwk.UnschedulableAndUnresolvable, backingOff(k, g.backoffUntil, g.lastFailure))
	}
	start := Start{Gang: k, Elastic: len(g.placed) >= g.min()}
	var blocker refusal.Refusal
	if start.Elastic || !s.roomMadeLocked(g, e) {
		blocker = s.blockerLocked(g, start.Elastic, now)
	}
	g.waits = blocker
	if blocker != nil {
		s.waits.park(k, pod, start.Elastic)
		return Start{}, refusal.Status(fwk.Unschedulable, blocker)
	}
	// Let through, it waits for nothing: a wait it was parked in before
	// (a hint retried it) must not speak for it (PreemptorOf).
	s.waits.unpark(k, pod.UID)
	e.tryAttempt = g.attempt
	e.allowed.Store(false)
	if !start.Elastic && g.reserved == 0 {
		start.Missing = g.min() - len(g.placed)
		for _, m := range g.members {
			if !m.placed() && !m.gated {
				start.Pending = append(start.Pending, m.pod)
			}
		}
	}
	return start, nil
}

// gangIncompleteLocked says why a gang cannot be tried at all: no PodGroup,
// or fewer live members that kube-scheduler may try than its min.
func (s *State) gangIncompleteLocked(g *gangEntry, k gang.Key) *fwk.Status {
	if why := s.wiring.missing[podGroupsAPI]; why != "" && (g == nil || g.group == nil) {
		return refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.PodGroupUnreadable{Gang: string(k), Why: why})
	}
	if g == nil || g.group == nil {
		return refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.NoPodGroup{Gang: string(k)})
	}
	if have, want := g.triable(), g.min(); have < want {
		return refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.GangIncomplete{Gang: string(k), Have: have, Gated: g.gated, Min: want})
	}
	return nil
}

// blockerLocked names what stands in the way of a pod of gang g: for a min
// member, another gang being placed; for an elastic pod, another gang that
// still needs its min and is neither backing off nor held. O(gangs that
// need their min), never O(pods).
func (s *State) blockerLocked(g *gangEntry, elastic bool, now time.Time) refusal.Refusal {
	if !elastic {
		for k := range s.assembly.assembling {
			if other := s.books.gangs[k]; k != g.key && other != nil {
				return refusal.GangBeingPlaced{Gang: string(k), Placed: len(other.placed), Min: other.min()}
			}
		}
		return nil
	}
	for k := range s.assembly.awaitingMin {
		if other := s.books.gangs[k]; k != g.key && other != nil && s.blocksElasticLocked(other, now) {
			return refusal.ElasticWaits{Gang: string(k), Missing: other.min() - len(other.placed), Min: other.min()}
		}
	}
	return nil
}

// roomMadeLocked tells whether the room a preemption made for gang g is
// free and kept for every member its min still misses, in the queue e is
// in. Placing those members takes no room anyone else may use (KeptFrom),
// so they need not wait for another gang being placed: a reclaim storm's
// gangs are otherwise placed one at a time while the room made for them
// stands idle, and the room of those still waiting when it expires goes to
// others (SPEC §5.8).
func (s *State) roomMadeLocked(g *gangEntry, e *podEntry) bool {
	pr := s.preemptions.of(PreemptorKeyFor(g.key, e.pod))
	if pr == nil || pr.victims.Len() > 0 || pr.queue != e.Queue {
		return false
	}
	kept := 0
	for _, c := range pr.claims {
		if c.Queue == pr.queue {
			kept++
		}
	}
	return kept >= g.min()-len(g.placed)
}

// blocksElasticLocked: a gang that needs its min keeps other gangs' elastic
// pods waiting, unless it is backing off or held back by admission (then
// it is not about to be placed).
func (s *State) blocksElasticLocked(g *gangEntry, now time.Time) bool {
	return len(g.held) == 0 && !now.Before(g.backoffUntil)
}

// FailGang records that a gang cannot place its min now (a min member fits
// nowhere): its waiting members give back their nodes and it backs off.
func (s *State) FailGang(k gang.Key, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.books.gangs[k]; g != nil {
		g.gaveUp = 0 // its members are tried: not one that never comes
		s.failLocked(g, reason, true)
	}
}

// maxGaveUpDoublings bounds how often a gang's backoff doubles for
// attempts given up in a row (gangEntry.gaveUp): at most 32 times
// podGroupBackoffSeconds.
const maxGaveUpDoublings = 5

// failLocked ends a gang's attempt: its members waiting at Permit are
// rejected, so they give back their nodes. With backoff (a real failure,
// not a gang that lost its members or its PodGroup), the gang waits out
// gangBackoff, its PodGroup gets an event, and its pods are woken after.
func (s *State) failLocked(g *gangEntry, reason string, backoff bool) {
	g.attempt++
	waiting := reservedLocked(g)
	s.rejectLocked(waiting, fmt.Sprintf("gang %s gives back its reservations: %s", g.key, reason))
	// Members already let through Permit, waiting for a bind slot, no
	// longer count as placed: the gang's next attempt starts from what is
	// bound, and they are refused before they bind (StillPlaced). One that
	// binds all the same is placed again when the API shows it bound.
	var passed []*podEntry
	for _, e := range g.placed {
		if !e.bound && e.allowed.Load() {
			passed = append(passed, e)
		}
	}
	for _, e := range passed {
		s.unplaceLocked(e)
	}
	if backoff {
		d := s.settings.GangBackoff
		for range min(max(g.gaveUp-1, 0), maxGaveUpDoublings) {
			if d > math.MaxInt64/2 {
				break // a backoff of centuries already
			}
			d *= 2
		}
		if until := s.clock.Now().Add(d); until.After(g.backoffUntil) {
			g.backoffUntil = until
		}
		g.lastFailure = reason
		s.noteGangLocked(g.key)
		if ref := podGroupRef(g); ref != nil {
			s.eventLocked(ref, corev1.EventTypeWarning, "GangUnschedulable", "Scheduling", fmt.Sprintf(
				"%s; gave back %d reserved pods, retrying in %s", reason, len(waiting), d))
		}
		k := g.key
		s.clock.AfterFunc(d, func() { s.wakeGang(k) })
		// A gang backing off keeps nobody's elastic pods waiting.
		s.wakeElasticLocked()
	}
	s.wakeNextGangLocked()
}

// wakeGang wakes a gang's pods that are not placed, when its backoff ends.
func (s *State) wakeGang(k gang.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.books.gangs[k]
	if g == nil {
		return
	}
	delete(s.waits.parkedGangs, k)
	s.activateLocked(pending(g))
	s.noteGangLocked(k)
}

// refreshGangLocked recomputes whether a gang is being assembled and
// whether it needs its min, wakes who waited for that to change, and
// forgets a gang nothing is left of.
func (s *State) refreshGangLocked(g *gangEntry) {
	k := g.key
	assembled, gotMin, lostMin := s.assembly.refresh(g)
	admissible := g.group != nil && g.triable() >= g.min() && !g.split()
	if admissible && !g.admissible {
		s.books.gangAdmitted.LoadOrStore(k, s.clock.Now())
		s.releasedLocked(g, splitHolder)
		s.wakePendingLocked(g)
		// Members of an attempt its PodGroup's deletion ended, not yet
		// back from Permit when it is made again: nothing else wakes them.
		s.activateLocked(leavingAttempt(g))
	}
	g.admissible = admissible
	s.observeMinBoundLocked(g)
	s.watchBelowMinLocked(g)
	if g.empty() {
		s.assembly.belowMin.Delete(k)
		delete(s.books.gangs, k)
		delete(s.waits.parkedGangs, k)
		delete(s.notes.gangs, k)
		s.books.gangCreated.Delete(k)
		s.books.gangAdmitted.Delete(k)
	}
	if assembled {
		s.wakeNextGangLocked()
	}
	if gotMin {
		s.wakeElasticLocked()
	}
	if lostMin {
		s.wakeOwnElasticLocked(g)
	}
}

// wakeOwnElasticLocked wakes the pods of g parked as elastic: g needs its
// min again (its min members completed or went while these waited), so
// they are its min members now, and nothing else would wake them while g
// itself is the gang that needs its min. O(members of g).
func (s *State) wakeOwnElasticLocked(g *gangEntry) {
	var woken []*corev1.Pod
	for _, m := range g.members {
		if p, ok := s.waits.parkedElastic[m.pod.UID]; ok {
			delete(s.waits.parkedElastic, m.pod.UID)
			woken = append(woken, p)
		}
	}
	if len(woken) > 0 {
		s.activateLocked(slices.Values(woken))
	}
}

// wakeNextGangLocked, when no gang is being assembled, wakes the parked
// gang that comes first in queue order (priority, then PodGroup age), not
// every parked pod: the others would only be parked again. A gang that
// cannot start (held, backing off, incomplete) is woken too, so its pods
// wait where they belong, and the next one is tried.
func (s *State) wakeNextGangLocked() {
	if s.assembly.assembling.Len() > 0 {
		return
	}
	now := s.clock.Now()
	for len(s.waits.parkedGangs) > 0 {
		k := s.firstParkedLocked()
		s.activateLocked(maps.Values(s.waits.parkedGangs.take(k)))
		s.assembly.lastGangWake = now
		if g := s.books.gangs[k]; g != nil && s.gangIncompleteLocked(g, k) == nil && s.blocksElasticLocked(g, now) {
			return
		}
	}
}

// firstParkedLocked is the parked gang the scheduling queue would take
// first: highest priority, then oldest PodGroup, then name.
func (s *State) firstParkedLocked() gang.Key {
	type cand struct {
		k        gang.Key
		priority int32
		created  time.Time
	}
	cands := make([]cand, 0, len(s.waits.parkedGangs))
	for k, pods := range s.waits.parkedGangs {
		c := cand{k: k}
		for _, p := range pods {
			c.priority = max(c.priority, podPriority(p))
		}
		if g := s.books.gangs[k]; g != nil && g.group != nil {
			c.created = g.group.CreationTimestamp.Time
		}
		cands = append(cands, c)
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return a.k < b.k
	})
	return cands[0].k
}

// wakeElasticLocked wakes the parked elastic pods once no gang that needs
// its min holds them back any more (SPEC §2.4).
func (s *State) wakeElasticLocked() {
	if len(s.waits.parkedElastic) == 0 {
		return
	}
	now := s.clock.Now()
	for k := range s.assembly.awaitingMin {
		if g := s.books.gangs[k]; g != nil && s.blocksElasticLocked(g, now) {
			return
		}
	}
	s.activateLocked(maps.Values(s.waits.takeElastic()))
}

// backstop is how long parked gangs wait, with nothing being assembled,
// before tick wakes the next one anyway.
const backstop = 5 * time.Second

// tick is a backstop run every few seconds: parked pods are woken if what
// they wait for is over and no event woke them (a gang woken ahead of them
// that never started, say), and pods deferred until the state synced are
// woken once it has.
func (s *State) tick() {
	synced := s.Synced()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clock.Since(s.assembly.lastGangWake) >= backstop {
		s.wakeNextGangLocked()
	}
	s.expirePreemptionsLocked()
	s.foundAPIsLocked()
	s.wakeElasticLocked()
	if synced && len(s.waits.deferred) > 0 {
		s.activateLocked(maps.Values(s.waits.takeDeferred()))
	}
}
