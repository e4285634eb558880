package coscheduling

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
)

// gangState is what the manager knows of one gang, from informers and from
// this scheduler's own reservations.
type gangState struct {
	// hasGroup is false until the PodGroup is seen.
	hasGroup  bool
	minMember int32
	created   time.Time
	// members are the gang's live pods of this scheduler, by UID.
	members map[types.UID]*corev1.Pod
	// bound are members the API shows on a node.
	bound sets.Set[types.UID]
	// reserved are members this scheduler reserved and has not yet seen
	// bound; a UID leaves reserved when it enters bound, so the two never overlap.
	reserved     sets.Set[types.UID]
	backoffUntil time.Time
	lastFailure  string
}

// placed counts members that are bound or reserved, in O(1).
func (g *gangState) placed() int { return g.bound.Len() + g.reserved.Len() }

// waiting counts reserved members not yet bound: those at Permit or binding.
func (g *gangState) waiting() int { return g.reserved.Len() }

// view is a copy of a gang's numbers, taken under the lock.
type view struct {
	hasGroup     bool
	minMember    int32
	members      int
	placed       int
	waiting      int
	backoffUntil time.Time
	lastFailure  string
}

// manager keeps every gang's state, fed by pod and PodGroup informers and by
// Reserve/Unreserve. One lock guards it all; methods ending in Locked expect
// it held. It never calls the API server or the scheduling queue under the
// lock: pods to wake are returned to the caller, who activates them after.
type manager struct {
	clock   clock.Clock
	backoff time.Duration
	// holds are gangs another plugin keeps out of scheduling; they do not
	// hold back elastic pods.
	holds *gang.Holds

	mu    sync.RWMutex
	gangs map[gang.Key]*gangState
	// assembling are gangs with members waiting at Permit and fewer than min placed.
	assembling sets.Set[gang.Key]
	// needMin are gangs with a PodGroup, at least min members, and fewer than min placed.
	needMin sets.Set[gang.Key]
	// parked are pods turned away because another gang was being placed, or
	// because a gang still needed its min; they are woken when that changes.
	parked map[types.UID]*corev1.Pod
}

func newManager(clk clock.Clock, backoff time.Duration, holds *gang.Holds) *manager {
	return &manager{
		clock:      clk,
		backoff:    backoff,
		holds:      holds,
		gangs:      map[gang.Key]*gangState{},
		assembling: sets.New[gang.Key](),
		needMin:    sets.New[gang.Key](),
		parked:     map[types.UID]*corev1.Pod{},
	}
}

func (m *manager) getLocked(k gang.Key) *gangState {
	g := m.gangs[k]
	if g == nil {
		g = &gangState{members: map[types.UID]*corev1.Pod{}, bound: sets.New[types.UID](), reserved: sets.New[types.UID]()}
		m.gangs[k] = g
	}
	return g
}

// refreshLocked recomputes a gang's membership in the assembling and needMin
// sets, and returns the parked pods to wake if the gang left either set.
func (m *manager) refreshLocked(k gang.Key) map[string]*corev1.Pod {
	g := m.gangs[k]
	wasBlocking := m.assembling.Has(k) || m.needMin.Has(k)
	m.assembling.Delete(k)
	m.needMin.Delete(k)
	if g != nil {
		below := g.placed() < int(g.minMember)
		if below && g.waiting() > 0 {
			m.assembling.Insert(k)
		}
		if g.hasGroup && below && len(g.members) >= int(g.minMember) {
			m.needMin.Insert(k)
		}
		if !g.hasGroup && len(g.members) == 0 && g.reserved.Len() == 0 {
			delete(m.gangs, k)
		}
	}
	if wasBlocking && !m.assembling.Has(k) && !m.needMin.Has(k) {
		return m.unparkLocked()
	}
	return nil
}

func (m *manager) unparkLocked() map[string]*corev1.Pod {
	if len(m.parked) == 0 {
		return nil
	}
	out := make(map[string]*corev1.Pod, len(m.parked))
	for _, p := range m.parked {
		out[p.Namespace+"/"+p.Name] = p
	}
	m.parked = map[types.UID]*corev1.Pod{}
	return out
}

// upsertPod records a pod of this scheduler, live or not. It returns pods to
// wake: the gang's pods once it has min members, or parked pods.
func (m *manager) upsertPod(pod *corev1.Pod) map[string]*corev1.Pod {
	k, ok := gang.Of(pod)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.getLocked(k)
	if isTerminal(pod) {
		delete(g.members, pod.UID)
		g.bound.Delete(pod.UID)
		g.reserved.Delete(pod.UID)
		return m.refreshLocked(k)
	}
	before := len(g.members)
	g.members[pod.UID] = pod
	if pod.Spec.NodeName != "" {
		g.bound.Insert(pod.UID)
		g.reserved.Delete(pod.UID)
	}
	wake := m.refreshLocked(k)
	if before < int(g.minMember) && len(g.members) >= int(g.minMember) {
		wake = merge(wake, m.pendingMembersLocked(g))
	}
	return wake
}

// deletePod forgets a pod.
func (m *manager) deletePod(pod *corev1.Pod) map[string]*corev1.Pod {
	k, ok := gang.Of(pod)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parked, pod.UID)
	g := m.getLocked(k)
	delete(g.members, pod.UID)
	g.bound.Delete(pod.UID)
	g.reserved.Delete(pod.UID)
	return m.refreshLocked(k)
}

// upsertPodGroup records a PodGroup's min and creation time.
func (m *manager) upsertPodGroup(pg *schedv1alpha1.PodGroup) map[string]*corev1.Pod {
	k := gang.KeyOf(pg)
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.getLocked(k)
	g.hasGroup = true
	g.minMember = pg.Spec.MinMember
	g.created = pg.CreationTimestamp.Time
	return merge(m.refreshLocked(k), m.pendingMembersLocked(g))
}

// deletePodGroup forgets a PodGroup; its pods wait until it is back.
func (m *manager) deletePodGroup(pg *schedv1alpha1.PodGroup) map[string]*corev1.Pod {
	k := gang.KeyOf(pg)
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.getLocked(k)
	g.hasGroup = false
	g.minMember = 0
	return m.refreshLocked(k)
}

// reserve records that this scheduler reserved a node for a gang's pod, and
// returns parked pods to wake if that completed the gang's min.
func (m *manager) reserve(pod *corev1.Pod, k gang.Key) map[string]*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.getLocked(k); !g.bound.Has(pod.UID) {
		g.reserved.Insert(pod.UID)
	}
	return m.refreshLocked(k)
}

// unreserve gives back a pod's reservation. If that leaves the gang below
// min, the UIDs of its other waiting members are returned, to be rejected so
// they give back what they hold too, and the gang backs off; started says
// whether this began a new backoff (rather than one already under way).
func (m *manager) unreserve(pod *corev1.Pod, k gang.Key, reason string) (siblings []types.UID, started bool, wake map[string]*corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.getLocked(k)
	if !g.reserved.Has(pod.UID) {
		return nil, false, nil
	}
	g.reserved.Delete(pod.UID)
	if g.placed() < int(g.minMember) {
		siblings = g.reserved.UnsortedList()
		if !m.clock.Now().Before(g.backoffUntil) {
			m.backoffLocked(g, reason)
			started = true
		}
	}
	return siblings, started, m.refreshLocked(k)
}

// fail records that a min member could not be placed: the gang backs off and
// the UIDs of its waiting members are returned to be rejected.
func (m *manager) fail(k gang.Key, reason string) (waiting []types.UID, wake map[string]*corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.getLocked(k)
	waiting = g.reserved.UnsortedList()
	m.backoffLocked(g, reason)
	// A gang backing off no longer holds back anyone's elastic pods.
	return waiting, m.unparkLocked()
}

// reservedMembers lists the gang's reserved members: those at Permit or binding.
func (m *manager) reservedMembers(k gang.Key) []types.UID {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.gangs[k]; g != nil {
		return g.reserved.UnsortedList()
	}
	return nil
}

func (m *manager) backoffLocked(g *gangState, reason string) {
	until := m.clock.Now().Add(m.backoff)
	if until.After(g.backoffUntil) {
		g.backoffUntil = until
	}
	g.lastFailure = reason
}

// unparkAll returns every parked pod, to wake them.
func (m *manager) unparkAll() map[string]*corev1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unparkLocked()
}

// pendingMembers are the gang's members not yet placed, to wake them.
func (m *manager) pendingMembers(k gang.Key) map[string]*corev1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.gangs[k]; g != nil {
		return m.pendingMembersLocked(g)
	}
	return nil
}

func (m *manager) pendingMembersLocked(g *gangState) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for uid, p := range g.members {
		if !g.bound.Has(uid) && !g.reserved.Has(uid) {
			out[p.Namespace+"/"+p.Name] = p
		}
	}
	return out
}

// pendingList is the gang's members not yet placed.
func (m *manager) pendingList(k gang.Key) []*corev1.Pod {
	pods := m.pendingMembers(k)
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	return out
}

// view returns a copy of a gang's numbers.
func (m *manager) view(k gang.Key) view {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var v view
	if g := m.gangs[k]; g != nil {
		v.hasGroup, v.minMember, v.members, v.placed, v.waiting = g.hasGroup, g.minMember, len(g.members), g.placed(), g.waiting()
		v.backoffUntil, v.lastFailure = g.backoffUntil, g.lastFailure
	}
	return v
}

// parkIfBlocked looks for what stands in the way of pod, of gang k: for a min
// member, another gang being placed right now; for an elastic pod, another
// gang that still needs its min and is not backing off. If there is one, the
// pod is parked, to be woken when that changes, and the reason is returned;
// the check and the parking happen under one lock so no wake-up is missed.
// The cost is O(gangs that need their min), never O(pods).
func (m *manager) parkIfBlocked(pod *corev1.Pod, k gang.Key, elastic bool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	reason := ""
	if !elastic {
		for other := range m.assembling {
			if other != k {
				g := m.gangs[other]
				reason = fmt.Sprintf("waiting for gang %s, which is being placed (%d of its min %d placed)", other, g.placed(), g.minMember)
				break
			}
		}
	} else {
		now := m.clock.Now()
		for other := range m.needMin {
			if g := m.gangs[other]; other != k && !now.Before(g.backoffUntil) && !m.holds.Held(other) {
				reason = fmt.Sprintf("elastic pods wait while gang %s still needs %d more pods for its min of %d", other, int(g.minMember)-g.placed(), g.minMember)
				break
			}
		}
	}
	if reason != "" {
		m.parked[pod.UID] = pod
	}
	return reason
}

// created is the creation time of a gang's PodGroup, for queue order.
func (m *manager) created(k gang.Key) (time.Time, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.gangs[k]; g != nil && g.hasGroup {
		return g.created, true
	}
	return time.Time{}, false
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func merge(a, b map[string]*corev1.Pod) map[string]*corev1.Pod {
	if len(a) == 0 {
		return b
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}
