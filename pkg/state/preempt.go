package state

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/refusal"
)

// What preemption (pkg/preemption) reads of the state, and what it records
// in it: the pods a starving pod makes room for, the placed pods it may
// evict, and, once it has evicted, the room kept for the preemptor while
// its victims terminate (SPEC §5.8).

// Preemptor is what a starving pod's preemption makes room for.
type Preemptor struct {
	// Key names the preemptor: its gang, or the pod for a pod without one.
	Key   string
	Gang  gang.Key
	Queue string
	// Priority is the pod's; Pods are the members to place, the pod first,
	// then the gang's other members that are not placed, in rank order.
	Priority int32
	Pods     []*corev1.Pod
	// Missing is how many of Pods the plan must place: the rest of the
	// gang's min, 1 for a pod without a gang.
	Missing int
}

// PreemptorOf says what pod's preemption must make room for, or, as
// reason, why it must not preempt: an elastic pod never does (SPEC §2.4),
// nor a pod that waits for another gang rather than for room, nor a gang
// whose room is being freed by an earlier preemption (SPEC §5.8), which
// waiting says.
func (s *State) PreemptorOf(pod *corev1.Pod) (p Preemptor, reason string, waiting bool) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return p, "its preemptionPolicy is Never", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A pod that reaches PostFilter before the state's informer handler
	// delivered it is recorded here, as Reserve would record it: the
	// quota plugins' PreFilter only read it (Prospect).
	e, recorded := s.ensurePodLocked(pod)
	if !recorded {
		return p, "it was deleted", false
	}
	p = Preemptor{Key: s.PreemptorKeyOf(pod), Gang: e.Gang, Queue: e.Queue, Priority: e.Priority, Pods: []*corev1.Pod{pod}, Missing: 1}
	if e.Denied != nil {
		return p, e.Denied.String(), false // nothing of any queue is touched for it (SPEC §1.1)
	}
	if e.OwnerUnseen != "" {
		return p, refusal.OwnerUnseen{Owner: e.OwnerUnseen}.String(), false
	}
	if ongoing := s.preemptions.underWay[p.Key]; ongoing != nil {
		switch n := ongoing.victims.Len(); {
		case n == 1:
			return p, "1 pod evicted for it is still terminating; its room is kept for it", true
		case n > 1:
			return p, fmt.Sprintf("%d pods evicted for it are still terminating; their room is kept for it", n), true
		}
		return p, "the room made for it is kept while its members are placed", true
	}
	if e.Gang == "" {
		return p, "", false
	}
	if parked, elastic := s.waits.parked(e.Gang, pod.UID); elastic {
		return p, "it is an elastic pod: elastic pods never preempt", false
	} else if parked {
		return p, "it waits for another gang to be placed, not for room", false
	}
	g := s.books.gangs[e.Gang]
	if g == nil || g.group == nil || g.triable() < g.min() {
		return p, "its gang is not complete", false
	}
	if len(g.held) > 0 || s.clock.Now().Before(g.backoffUntil) {
		return p, "its gang is held or backing off", false
	}
	p.Missing = g.min() - len(g.placed)
	if p.Missing <= 0 {
		return p, "it is an elastic pod: elastic pods never preempt", false
	}
	others := make([]*podEntry, 0, len(g.members))
	for _, m := range g.members {
		if !m.placed() && !m.gated && m.pod.UID != pod.UID {
			others = append(others, m)
		}
	}
	sort.Slice(others, func(i, j int) bool { return gang.Less(others[i].pod, others[j].pod) })
	for _, m := range others {
		p.Pods = append(p.Pods, m.pod)
	}
	if len(p.Pods) < p.Missing {
		return p, "its gang has fewer pods left to place than its min needs", false
	}
	return p, "", false
}

// PreemptionUnderWay tells whether room is being made for pod's gang (or
// for pod): victims terminating, or room kept while its members are placed.
func (s *State) PreemptionUnderWay(pod *corev1.Pod) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.preemptions.underWay[s.PreemptorKeyOf(pod)] != nil
}

// PlacedIn lists the placed pods of queues, possible victims of
// preemption, in O(their placed pods). Each is seen with the
// preemptibility it was booked with (SPEC §3.7) and its rank in its gang.
func (s *State) PlacedIn(queues ...string) []PodView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []PodView
	// ranks are the placed pods' ranks in their gangs, found once per gang.
	ranks := map[*podEntry]int{}
	for _, name := range queues {
		q := s.books.queues[name]
		if q == nil {
			continue
		}
		for _, e := range q.placed {
			if _, victim := s.preemptions.victimOf[e.pod.UID]; victim || e.terminating {
				continue // already being evicted, or deleted
			}
			p := e.view()
			if g := s.books.gangs[e.Gang]; g != nil {
				if _, ok := ranks[e]; !ok {
					ranks[e] = -1 // not among them: no rank
					for i, m := range g.placed {
						ranks[m] = i
					}
				}
				p.Rank = ranks[e]
				p.GangEvicted = g.evicted
			}
			out = append(out, p)
		}
	}
	return out
}

// InFlight is how the preemptions under way will change a queue's
// allocation once they are done: their victims' charges leave it, and the
// room kept for its members not placed yet comes to it.
type InFlight struct {
	Leaving, Coming Charge
	// Beyond is the part of the room kept for this queue's preemptors that
	// is not their victims' (yet charged) room: room that was free, or
	// whose victims are gone. It is what the kept room takes from what is
	// free now.
	Beyond Charge
}

// Charge is resources and cards, by model.
type Charge struct {
	Resources quota.Resources
	Cards     map[string]int64
}

func newCharge() Charge { return Charge{Resources: quota.Resources{}, Cards: map[string]int64{}} }

// Usages returns every queue's usage (Usage) and how the preemptions under
// way will change it, read at one instant. Usage charges victims until they
// are gone (SPEC §3.7) and members from when they are placed; reclaim
// judges shares with both changes applied, so that a second gang of a
// queue sees the room already being made for the first, and a queue being
// taken from is not taken from again for pods it is already giving up. It
// costs the queues, and the victims and kept room of the preemptions under
// way.
func (s *State) Usages() (map[string]Usage, map[string]InFlight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshDeservedLocked()
	usage := make(map[string]Usage, len(s.books.queues))
	for name := range s.books.queues {
		usage[name] = s.usageLocked(name, true)
	}
	return usage, s.inFlightLocked()
}

func (s *State) inFlightLocked() map[string]InFlight {
	out := map[string]InFlight{}
	of := func(q string) InFlight {
		f, ok := out[q]
		if !ok {
			f = InFlight{Leaving: newCharge(), Coming: newCharge(), Beyond: newCharge()}
			out[q] = f
		}
		return f
	}
	// Victims of reclaims this process does not remember (made before a
	// restart, or by another replica that led) leave their queues too,
	// for as long as a preemption waits for them.
	for uid, e := range s.books.evicted {
		if _, remembered := s.preemptions.victimOf[uid]; remembered || !e.placed() || e.Denied != nil || !s.WaitedFor(e.pod) {
			continue
		}
		of(e.Queue).Leaving.add(e.Request, e.cards)
	}
	for _, pr := range s.preemptions.underWay {
		leaving, coming := newCharge(), newCharge()
		for uid := range pr.victims {
			e := s.books.pods[uid]
			if e == nil || !e.placed() || e.Denied != nil {
				continue // not charged
			}
			f := of(e.Queue)
			f.Leaving.add(e.Request, e.cards)
			leaving.add(e.Request, e.cards)
		}
		queue := ""
		for uid, c := range pr.claims {
			e := s.books.pods[uid]
			n := s.books.nodes[c.Node]
			if e == nil || e.placed() || n == nil {
				continue // charged already; or no room left
			}
			// To the queue the room was made for, whatever the member's
			// queue is now, even one it is denied (the room is kept for
			// it all the same); charged as the member will be (Request).
			queue = c.Queue
			cards := n.models.PodCards(e.pod)
			of(queue).Coming.add(e.Request, cards)
			coming.add(e.Request, cards)
		}
		if queue == "" {
			continue
		}
		beyond := of(queue).Beyond
		for r, v := range coming.Resources {
			if d := v - leaving.Resources[r]; d > 0 {
				beyond.Resources[r] += d
			}
		}
		for m, v := range coming.Cards {
			if d := v - leaving.Cards[m]; d > 0 {
				beyond.Cards[m] += d
			}
		}
	}
	return out
}

// add adds resources and cards to c.
func (c Charge) add(r quota.Resources, cards map[string]int64) {
	c.Resources.Add(r)
	for m, n := range cards {
		c.Cards[m] += n
	}
}

// Queues lists every queue the state knows, existing or not.
func (s *State) Queues() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.books.queues))
}

// claimTTL bounds how long, beyond its victims' termination grace period,
// room stays kept for a preemptor whose victims do not go (a finalizer
// that never ends), and claimSettle how long after they went for members
// that are not placed: a preemptor whose room was taken or that never
// comes back neither keeps it for ever nor is kept from preempting again.
const (
	claimTTL    = 5 * time.Minute
	claimSettle = 30 * time.Second
)

// WaitedFor tells whether a pod being deleted is still waited for as a
// victim: as long as the state waits for the victims it remembers, its
// grace period (at most maxGrace) from when it was deleted and claimTTL
// more. A victim a finalizer keeps for ever then keeps its preemptor no
// longer.
func (s *State) WaitedFor(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	// The deletion timestamp is when the grace period given ends.
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
	deleted := pod.DeletionTimestamp.Add(-grace)
	return s.clock.Now().Before(deleted.Add(min(max(grace, 0), maxGrace) + claimTTL))
}

// Preempted records that victims are being evicted for p's members, which
// are nominated on nodes: their room is kept on those nodes (ClaimsOn)
// until they are placed, and no second round starts for p while a victim
// remains. When the last victim is gone the members are woken.
func (s *State) Preempted(p Preemptor, victims []types.UID, nominated map[*corev1.Pod]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.preemptions.underWay[p.Key]; old != nil {
		s.endPreemptionLocked(old, false) // the members are nominated anew
	}
	var grace time.Duration
	evicted := sets.New[gang.Key]()
	for _, uid := range victims {
		if e := s.books.pods[uid]; e != nil {
			grace = max(grace, gracePeriod(e.pod))
			if g := s.books.gangs[e.Gang]; g != nil && !evicted.Has(g.key) {
				evicted.Insert(g.key)
				g.evicted++
			}
		}
	}
	pr := &preemption{key: p.Key, queue: p.Queue, victims: sets.New(victims...), claims: map[types.UID]Claim{}, used: map[types.UID]Claim{},
		evicted: evicted, deadline: s.clock.Now().Add(grace + claimTTL)}
	for pod, node := range nominated {
		pr.members = append(pr.members, pod)
		if s.books.pods[pod.UID] != nil {
			pr.claims[pod.UID] = Claim{Key: p.Key, Queue: p.Queue, Pod: pod.UID, Node: node, Request: quota.PodRequests(pod)}
		}
	}
	s.preemptions.start(pr)
}

// victimGoneLocked notes that a victim is deleted; the last one wakes its
// preemptor's members.
func (s *State) victimGoneLocked(uid types.UID) {
	if pr := s.preemptions.victimGone(uid, s.clock.Now()); pr != nil {
		if len(pr.claims) > 0 && s.leftQueueLocked(pr) {
			// Members moved to another queue while the victims went: the
			// room is not theirs to take (leftPreemptionQueueLocked).
			s.endPreemptionLocked(pr, true)
		}
		s.activateLocked(slices.Values(pr.members))
	}
}

// EvictionFailed ends the preemption a victim was evicted for when the
// eviction could not be made, even with retries: the victim still runs, so
// it is not counted as going, the room kept for the preemptor is given up,
// and its members are woken to try again (SPEC §5.8).
func (s *State) EvictionFailed(key string, victim types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.preemptions.victimOf[victim] != key {
		return // gone meanwhile, or the preemption already ended
	}
	if pr := s.preemptions.underWay[key]; pr != nil {
		// The victim's gang was not evicted after all: it is not counted
		// as evicted by this preemption (gangEntry.evicted).
		if e := s.books.pods[victim]; e != nil {
			if g := s.books.gangs[e.Gang]; g != nil && pr.evicted.Has(g.key) {
				pr.evicted.Delete(g.key)
				g.evicted--
			}
		}
		s.endPreemptionLocked(pr, true)
		s.activateLocked(slices.Values(pr.members))
	}
}

// endPreemptionLocked forgets a preemption. With dropNominations, the members
// that did not take their room lose their nomination too, so the room is
// not held for them any more by kube-scheduler's nominator either.
func (s *State) endPreemptionLocked(pr *preemption, dropNominations bool) {
	s.preemptions.end(pr)
	for uid := range pr.victims {
		// A victim that never went may be counted as free again by other
		// gangs' admission (FreeableInQueue): those waiting are woken.
		if e := s.books.pods[uid]; e != nil {
			s.roomFreedLocked(e.Queue)
		}
	}
	if !dropNominations || len(pr.claims) == 0 {
		return
	}
	var stale []*corev1.Pod
	for _, m := range pr.members {
		if _, ok := pr.claims[m.UID]; ok {
			stale = append(stale, m)
		}
	}
	s.out.push(func(fw Framework) { unnominate(fw, stale) })
}

// gracePeriod is how long a pod may take to terminate once deleted, as a
// preemption waits for it: at most maxGrace, which also keeps a grace
// period of billions of seconds from overflowing into the past.
func gracePeriod(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(min(max(*g, 0), int64(maxGrace/time.Second))) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// maxGrace bounds how long a preemption waits for a victim to terminate.
const maxGrace = 24 * time.Hour

// expirePreemptionsLocked ends preemptions whose members have not come for
// their room within claimSettle of their victims going, or claimTTL in
// all, and wakes the members: they may preempt again.
func (s *State) expirePreemptionsLocked() {
	for _, pr := range s.preemptions.underWay {
		if s.clock.Now().After(pr.deadline) || (!pr.gone.IsZero() && s.clock.Since(pr.gone) > claimSettle) {
			s.endPreemptionLocked(pr, true)
			s.activateLocked(slices.Values(pr.members))
		}
	}
}

// PreemptorKeyOf is the key a pod's claims are kept under (Preemptor.Key):
// its gang's, or its own.
func (s *State) PreemptorKeyOf(pod *corev1.Pod) string {
	k, _ := s.GangOf(pod)
	return PreemptorKeyFor(k, pod)
}

// PreemptorKeyFor is the key the claims of pod, of gang k ("" for none),
// are kept under.
func PreemptorKeyFor(k gang.Key, pod *corev1.Pod) string {
	if k != "" {
		return "gang " + string(k)
	}
	return "pod " + pod.Namespace + "/" + pod.Name
}

// EnablePreemption records that CardinalPreemption runs in the profile.
func (s *State) EnablePreemption() { s.wiring.preemption.Store(true) }

// PreemptionEnabled tells whether CardinalPreemption runs in the profile.
func (s *State) PreemptionEnabled() bool { return s.wiring.preemption.Load() }
