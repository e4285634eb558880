package state

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.pods[pod.UID]
	if e == nil {
		return p, "it is unknown to Cardinal", false
	}
	p = Preemptor{Key: PreemptorKeyOf(pod), Gang: e.Gang, Queue: e.Queue, Priority: e.Priority, Pods: []*corev1.Pod{pod}, Missing: 1}
	if ongoing := s.preemptions[p.Key]; ongoing != nil {
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
	if _, parked := s.parkedElastic[pod.UID]; parked {
		return p, "it is an elastic pod: elastic pods never preempt", false
	}
	if _, parked := s.parkedGangs[e.Gang][pod.UID]; parked {
		return p, "it waits for another gang to be placed, not for room", false
	}
	g := s.gangs[e.Gang]
	if g == nil || g.group == nil || len(g.members) < g.min() {
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
		if !m.placed() && m.pod.UID != pod.UID {
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
	return s.preemptions[PreemptorKeyOf(pod)] != nil
}

// Placed is a placed pod as preemption sees it: a possible victim.
type Placed struct {
	Pod            *corev1.Pod
	Node           string
	Queue          string
	Gang           gang.Key
	Priority       int32
	Preemptibility workload.Preemptibility
	// Elastic: placed beyond its gang's min, by rank (pkg/gang).
	Elastic bool
	// Rank is its place among its gang's placed pods, 0 the oldest.
	Rank int
	// Bound is false for a pod this scheduler reserved and has not bound.
	Bound   bool
	Request quota.Resources
	Cards   map[string]int64
}

// PlacedIn lists the placed pods of queues, in O(their placed pods).
func (s *State) PlacedIn(queues ...string) []Placed {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Placed
	// ranks are the placed pods' ranks in their gangs, found once per gang.
	ranks := map[*podEntry]int{}
	for _, name := range queues {
		q := s.queues[name]
		if q == nil {
			continue
		}
		for _, e := range q.placed {
			if _, victim := s.victimOf[e.pod.UID]; victim {
				continue // already being evicted
			}
			p := Placed{
				Pod: e.pod, Node: e.node, Queue: e.Queue, Gang: e.Gang, Priority: e.Priority,
				Preemptibility: e.Preemptibility, Elastic: e.elastic, Bound: e.bound, Request: e.Request, Cards: e.cards,
			}
			if g := s.gangs[e.Gang]; g != nil {
				if _, ok := ranks[e]; !ok {
					ranks[e] = -1 // not among them: no rank
					for i, m := range g.placed {
						ranks[m] = i
					}
				}
				p.Rank = ranks[e]
			}
			out = append(out, p)
		}
	}
	return out
}

// Queues lists every queue the state knows, existing or not.
func (s *State) Queues() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.queues))
}

// preemption is an eviction under way for a preemptor: its victims, until
// they are gone, and the room kept on nodes for its members until they are
// placed.
type preemption struct {
	key     string
	victims sets.Set[types.UID]
	// claims are, per member, the node its room is kept on.
	claims map[types.UID]Claim
	// used are the claims placed pods of the preemptor took, by the placed
	// pod: given back to the members if it is unreserved.
	used map[types.UID]Claim
	// members are the preemptor's pods, woken when the victims are gone.
	members []*corev1.Pod
	// deadline ends the preemption even if a victim never goes.
	deadline time.Time
	// gone is when the last victim went; zero while one remains.
	gone time.Time
}

// Claim is room kept on a node for a preemptor's member (SPEC §5.8): other
// pods may not take it while the member waits for its victims to go.
type Claim struct {
	// Key is the preemptor's (Preemptor.Key); its own pods may use the room.
	Key     string
	Pod     types.UID
	Node    string
	Request quota.Resources
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

// Preempted records that victims are being evicted for p's members, which
// are nominated on nodes: their room is kept on those nodes (ClaimsOn)
// until they are placed, and no second round starts for p while a victim
// remains. When the last victim is gone the members are woken.
func (s *State) Preempted(p Preemptor, victims []types.UID, nominated map[*corev1.Pod]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.preemptions[p.Key]; old != nil {
		s.endPreemptionLocked(old, false) // the members are nominated anew
	}
	var grace time.Duration
	for _, uid := range victims {
		s.victimOf[uid] = p.Key
		if e := s.pods[uid]; e != nil {
			grace = max(grace, gracePeriod(e.pod))
		}
	}
	pr := &preemption{key: p.Key, victims: sets.New(victims...), claims: map[types.UID]Claim{}, used: map[types.UID]Claim{},
		deadline: s.clock.Now().Add(grace + claimTTL)}
	touched := sets.New[string]()
	for pod, node := range nominated {
		pr.members = append(pr.members, pod)
		e := s.pods[pod.UID]
		if e == nil {
			continue
		}
		c := Claim{Key: p.Key, Pod: pod.UID, Node: node, Request: quota.PodRequests(pod)}
		pr.claims[pod.UID] = c
		s.claimOf[pod.UID] = p.Key
		touched.Insert(node)
	}
	s.preemptions[p.Key] = pr
	for node := range touched {
		s.refreshClaimsLocked(node)
	}
}

// victimGoneLocked notes that a victim is deleted; the last one wakes its
// preemptor's members.
func (s *State) victimGoneLocked(uid types.UID) {
	key, ok := s.victimOf[uid]
	if !ok {
		return
	}
	delete(s.victimOf, uid)
	pr := s.preemptions[key]
	if pr == nil {
		return
	}
	pr.victims.Delete(uid)
	if pr.victims.Len() == 0 {
		pr.gone = s.clock.Now()
		s.activateLocked(slices.Values(pr.members))
		if len(pr.claims) == 0 {
			delete(s.preemptions, key)
		}
	}
}

// useClaimLocked notes that pod is placed on node: its own claim is done,
// or, for another pod of the same preemptor (any pod of a gang may be one
// of its min), a claim of the preemptor's on that node, whose room it took.
func (s *State) useClaimLocked(pod *corev1.Pod, node string) {
	pr := s.preemptions[PreemptorKeyOf(pod)]
	if pr == nil {
		return
	}
	// Its own room on node, else a sibling's there, else its own elsewhere
	// (placed on another node, it needs that room no more).
	c, ok := pr.claims[pod.UID]
	if !ok || c.Node != node {
		for _, other := range pr.claims {
			if other.Node == node {
				c, ok = other, true
				break
			}
		}
	}
	if !ok {
		return
	}
	pr.used[pod.UID] = c
	s.claimDoneLocked(c.Pod)
	if c.Pod == pod.UID {
		return
	}
	// pod took a sibling's room. A member that had room of its own
	// elsewhere hands it to that sibling; either way the sibling's
	// nomination on node is stale: kube-scheduler would go on counting it
	// there, on top of pod, and the gang's last members would each find
	// the node full of the other's nomination until the room expired.
	if own, had := pr.claims[pod.UID]; had {
		delete(pr.claims, pod.UID)
		delete(s.claimOf, pod.UID)
		own.Pod = c.Pod
		pr.claims[c.Pod] = own
		s.claimOf[c.Pod] = pr.key
		s.refreshClaimsLocked(own.Node)
	}
	var stale []*corev1.Pod
	for _, m := range pr.members {
		if m.UID == c.Pod {
			stale = append(stale, m)
			s.unnominated[m.UID] = struct{}{}
		}
	}
	s.out.push(func(fw Framework) { unnominate(fw, stale) })
	s.activateLocked(slices.Values(pr.members))
}

// unuseClaimLocked keeps the room again that pod took from its
// preemptor's claims, when pod gives it back (unreserved) while the
// preemption is under way.
func (s *State) unuseClaimLocked(pod *corev1.Pod) {
	pr := s.preemptions[PreemptorKeyOf(pod)]
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
		_, has := s.claimOf[c.Pod]
		if e := s.pods[c.Pod]; e == nil || e.placed() || has {
			c.Pod = pod.UID
		}
	}
	if _, has := s.claimOf[c.Pod]; has {
		return
	}
	pr.claims[c.Pod] = c
	s.claimOf[c.Pod] = pr.key
	s.refreshClaimsLocked(c.Node)
}

// renominatedLocked clears again the nomination of a pod whose room a
// sibling took, when an older patch that nominated it lands after the one
// that cleared it: kube-scheduler would count it on that node again.
func (s *State) renominatedLocked(pod *corev1.Pod) {
	if pod.Status.NominatedNodeName == "" {
		return
	}
	if _, ok := s.unnominated[pod.UID]; !ok {
		return
	}
	if e := s.pods[pod.UID]; e != nil && e.placed() {
		return // placed: kube-scheduler may nominate it where it waits at Permit
	}
	if key, ok := s.claimOf[pod.UID]; ok {
		if pr := s.preemptions[key]; pr != nil && pr.claims[pod.UID].Node == pod.Status.NominatedNodeName {
			return // where its room is: nominated anew by a later preemption
		}
	}
	s.out.push(func(fw Framework) { unnominate(fw, []*corev1.Pod{pod}) })
}

// claimDoneLocked drops a member's claim: it was placed, or it is gone.
func (s *State) claimDoneLocked(uid types.UID) {
	key, ok := s.claimOf[uid]
	if !ok {
		return
	}
	delete(s.claimOf, uid)
	pr := s.preemptions[key]
	if pr == nil {
		return
	}
	c := pr.claims[uid]
	delete(pr.claims, uid)
	s.refreshClaimsLocked(c.Node)
	if len(pr.claims) == 0 && pr.victims.Len() == 0 {
		delete(s.preemptions, key)
	}
}

// endPreemptionLocked forgets a preemption. With dropNominations, the members
// that did not take their room lose their nomination too, so the room is
// not held for them any more by kube-scheduler's nominator either.
func (s *State) endPreemptionLocked(pr *preemption, dropNominations bool) {
	for uid := range pr.victims {
		delete(s.victimOf, uid)
	}
	for uid := range pr.claims {
		delete(s.claimOf, uid)
	}
	delete(s.preemptions, pr.key)
	for _, c := range pr.claims {
		s.refreshClaimsLocked(c.Node)
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

// gracePeriod is how long a pod may take to terminate once deleted.
func gracePeriod(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// expirePreemptionsLocked ends preemptions whose members have not come for
// their room within claimSettle of their victims going, or claimTTL in
// all, and wakes the members: they may preempt again.
func (s *State) expirePreemptionsLocked() {
	for _, pr := range s.preemptions {
		if s.clock.Now().After(pr.deadline) || (!pr.gone.IsZero() && s.clock.Since(pr.gone) > claimSettle) {
			s.endPreemptionLocked(pr, true)
			s.activateLocked(slices.Values(pr.members))
		}
	}
}

// refreshClaimsLocked rebuilds a node's claims for lock-free reading.
func (s *State) refreshClaimsLocked(node string) {
	var claims []Claim
	for _, pr := range s.preemptions {
		for _, c := range pr.claims {
			if c.Node == node {
				claims = append(claims, c)
			}
		}
	}
	if len(claims) == 0 {
		if _, had := s.claimReads.LoadAndDelete(node); had {
			s.claimNodes.Add(-1)
		}
		return
	}
	// Counted before it is stored, so a reader that finds it stored also
	// finds the count above zero.
	s.claimNodes.Add(1)
	if _, had := s.claimReads.Swap(node, claims); had {
		s.claimNodes.Add(-1)
	}
}

// ClaimsOn returns the room kept on a node for preemptors' members. It
// takes no lock: Filter calls it for every node, and while no room is kept
// anywhere (almost always) it reads one counter.
func (s *State) ClaimsOn(node string) []Claim {
	if s.claimNodes.Load() == 0 {
		return nil
	}
	if v, ok := s.claimReads.Load(node); ok {
		return v.([]Claim)
	}
	return nil
}

// PreemptorKeyOf is the key a pod's claims are kept under (Preemptor.Key).
func PreemptorKeyOf(pod *corev1.Pod) string {
	if k, ok := gang.Of(pod); ok {
		return "gang " + string(k)
	}
	return "pod " + pod.Namespace + "/" + pod.Name
}

// simulationKey marks a CycleState that preemption made to try placements
// (pkg/preemption): the plugins' PreFilter then only records what Filter
// needs, and neither refuses on numbers Filter checks anyway (quota freed by
// simulated victims shows only through RemovePod), nor parks pods, nor
// changes the state.
const simulationKey fwk.StateKey = "CardinalSimulation"

type simulationMark struct{}

func (simulationMark) Clone() fwk.StateData { return simulationMark{} }

// MarkSimulation marks cs as a preemption simulation's.
func MarkSimulation(cs fwk.CycleState) { cs.Write(simulationKey, simulationMark{}) }

// Simulating tells whether cs is a preemption simulation's.
func Simulating(cs fwk.CycleState) bool {
	_, err := cs.Read(simulationKey)
	return err == nil
}

// A gang that cannot place its min gives back what it holds and backs off
// (CardinalGang's PostFilter), but not before preemption has tried to make
// room for it: backing off, it could not preempt. In whichever order a
// profile lists the two PostFilters, the failure comes last: CardinalGang,
// running first, defers it to CardinalPreemption through the cycle state.
const (
	preemptionTriedKey fwk.StateKey = "CardinalPreemptionTried"
	gangFailureKey     fwk.StateKey = "CardinalGangFailure"
)

type gangFailure struct {
	gang   gang.Key
	reason string
}

func (f gangFailure) Clone() fwk.StateData { return f }

// EnablePreemption records that CardinalPreemption runs in the profile.
func (s *State) EnablePreemption() { s.preemption.Store(true) }

// PreemptionEnabled tells whether CardinalPreemption runs in the profile.
func (s *State) PreemptionEnabled() bool { return s.preemption.Load() }

// MarkPreemptionTried records in cs that preemption ran in this cycle.
func MarkPreemptionTried(cs fwk.CycleState) { cs.Write(preemptionTriedKey, gangFailure{}) }

// PreemptionTried tells whether preemption ran in this cycle.
func PreemptionTried(cs fwk.CycleState) bool {
	_, err := cs.Read(preemptionTriedKey)
	return err == nil
}

// DeferGangFailure leaves a gang's failure, for reason, to preemption when
// it cannot make room.
func DeferGangFailure(cs fwk.CycleState, k gang.Key, reason string) {
	cs.Write(gangFailureKey, gangFailure{gang: k, reason: reason})
}

// DeferredGangFailure is the failure DeferGangFailure left, if any.
func DeferredGangFailure(cs fwk.CycleState) (k gang.Key, reason string, ok bool) {
	d, err := cs.Read(gangFailureKey)
	if err != nil {
		return "", "", false
	}
	f := d.(gangFailure)
	return f.gang, f.reason, true
}
