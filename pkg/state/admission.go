package state

import (
	"maps"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
)

// minToAdmit starts an admission check of a gang's pod (the quota plugins'
// PreEnqueue): it returns the pod's gang and how many more placed pods its
// min needs, or 0 when there is nothing to check: no gang, no PodGroup (the
// gang plugin says so), or its min placed, which ends holder's hold. Before
// the state has synced, st turns the pod away until it has (Defer).
func (s *State) minToAdmit(pod *corev1.Pod, holder string) (v GangStatus, missing int, st *fwk.Status) {
	k, ok := s.GangOf(pod)
	if !ok {
		return GangStatus{}, 0, nil
	}
	if !s.Synced() {
		return GangStatus{}, 0, s.Defer(pod)
	}
	if v, ok = s.GangStatus(k); !ok || v.Group == nil {
		return v, 0, nil
	}
	if missing = int(v.Group.Spec.MinMember) - v.Placed; missing <= 0 {
		s.Release(k, holder)
		return v, 0, nil
	}
	return v, missing, nil
}

// QuotaAdmission is one quota plugin's admission check (SPEC §3.4), run by
// AdmitToQuota: CardinalQueue's for resources, CardinalCardQuota's for card
// models. The skeleton (the gang's remaining min, hold or release, events on
// the PodGroup and the pod) is the state's; only Check differs.
type QuotaAdmission struct {
	// Holder is the plugin's name; EventReason the reason of its events.
	Holder, EventReason string
	// UsesCards: a held pod waits for room in its queue's card quota,
	// not its resource quota (WaitForRoom).
	UsesCards bool
	// Check says why the rest of the gang's min (missing pods) cannot fit
	// the pod's queue, or nil when it fits. judged is false when the check
	// has nothing to say about the gang (the plugin's PreFilter refuses
	// its pods and says why): its hold, if any, is left as it is.
	Check func(pod *corev1.Pod, v GangStatus, missing int, c PodView) (why refusal.Refusal, judged bool)
}

// AdmitToQuota is a quota plugin's PreEnqueue: it holds a gang back, so
// that none of its pods is even tried, while the rest of its min cannot
// fit its queue as a.Check says. The PodGroup gets an event when the
// reason changes, and the pod one each time (a held pod is never tried, so
// no FailedScheduling tells its reason; repeats fold into one series).
//
// It runs under the scheduling queue's lock: it reads the state, and what
// a hold it records sets off (wake-ups, events) happens later, through the
// outbox.
func (s *State) AdmitToQuota(pod *corev1.Pod, a QuotaAdmission) *fwk.Status {
	v, missing, st := s.minToAdmit(pod, a.Holder)
	if st != nil || missing == 0 {
		return st
	}
	c := s.Prospect(pod)
	if c.Denied != nil {
		return nil // CardinalQueue's PreFilter refuses it, with an event
	}
	why, judged := a.Check(pod, v, missing, c)
	if !judged {
		return nil
	}
	if why == nil {
		s.Release(v.Key, a.Holder)
		return nil
	}
	text := why.String() // rendered once, before the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gangLocked(v.Key)
	if s.holdLocked(pod, g, a, why, c.Queue) {
		s.eventLocked(podGroupRef(g), corev1.EventTypeWarning, a.EventReason, "Admission", text)
	}
	s.eventLocked(pod, corev1.EventTypeWarning, a.EventReason, "Admission", text)
	return refusal.Status(fwk.UnschedulableAndUnresolvable, why)
}

// ShareOfMin is a gang's total (its PodGroup's minResources, or its
// card-request annotation) scaled to the missing of its min members,
// rounded down. Admission only holds a gang that surely cannot fit: the
// pods of a gang may differ, and rounding up could hold for good a gang
// whose missing pods are the small ones and would fit; placement checks
// each pod exactly. The product is taken in 128 bits: no total the CRD
// accepts overflows (SPEC §3.7).
func ShareOfMin(total int64, missing, min int) int64 {
	if min <= 0 || missing >= min {
		return total
	}
	if total <= 0 || missing <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(total), uint64(missing))
	q, _ := bits.Div64(hi, lo, uint64(min)) // q <= total: hi < min
	return int64(q)
}

// Hold marks a gang held back by an admission check (a.Holder) for why,
// because pod's queue has no room for the rest of its min, and tells
// whether that holder's reason changed, so the caller records an event
// only then. The pod waits for room in its queue (WaitForRoom). A held gang is
// not about to be placed, so it keeps nobody's elastic pods waiting (SPEC
// §2.4, §3.4): they are woken, later, from the outbox, never from inside
// the scheduling queue's call.
func (s *State) Hold(pod *corev1.Pod, k gang.Key, a QuotaAdmission, why refusal.Refusal) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holdLocked(pod, s.gangLocked(k), a, why, s.queueOfLocked(pod))
}

func (s *State) holdLocked(pod *corev1.Pod, g *gangEntry, a QuotaAdmission, why refusal.Refusal, queue string) (changed bool) {
	wasHeld := len(g.held) > 0
	changed = s.heldLocked(g, a.Holder, why)
	if !wasHeld {
		s.wakeElasticLocked()
		s.wakeNextGangLocked()
	}
	s.waits.forRoom(pod, queue, a.UsesCards)
	s.refreshGangLocked(g)
	return changed
}

// Release marks a gang no longer held back by holder.
func (s *State) Release(k gang.Key, holder string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.books.gangs[k]; g != nil {
		s.releasedLocked(g, holder)
	}
}

// Defer turns away a gang pod that reached admission before the state
// synced (just after a start): it is woken once the state has synced, so
// admission never judges counts still being rebuilt, and never waits under
// the scheduling queue's lock.
func (s *State) Defer(pod *corev1.Pod) *fwk.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits.deferred[pod.UID] = pod
	return refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.Loading{})
}

// splitHolder holds a gang whose pods cannot be admitted as one.
const splitHolder = "gang"

// AdmitGang is the gang plugin's PreEnqueue (SPEC §2.1): a gang's pods are
// kept out of the scheduling queue until its PodGroup exists and minMember
// pods of it do, and a pod the grouper may group until it has ruled on it
// (grouping.go). A gang that can never be placed as one is held, with an
// event on its PodGroup that says what to fix: pods that resolve to
// different queues (one gang is charged to one queue), or pods that name
// another scheduler (no scheduler can place it all or nothing).
func (s *State) AdmitGang(pod *corev1.Pod) *fwk.Status {
	k, ok := s.GangOf(pod)
	if !ok {
		if st, inGang := s.admitUngangedPod(pod); !inGang {
			return st
		}
		k, _ = s.GangOf(pod) // put in its gang by the grouper meanwhile
	}
	if !s.Synced() {
		return s.Defer(pod)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensurePodLocked(pod)
	g := s.books.gangs[k]
	if g == nil || g.group == nil {
		st := s.gangIncompleteLocked(g, k)
		if s.wiring.missing[podGroupsAPI] != "" {
			// kube-scheduler records no event for a pod PreEnqueue turns away.
			s.reportLocked(podRef(pod), "PodGroupsUnreadable", "Admission", st.Message())
		}
		return st
	}
	if split := splitLocked(g, s.settings.SchedulerName); split != nil {
		if s.heldLocked(g, splitHolder, split) {
			s.eventLocked(podGroupRef(g), corev1.EventTypeWarning, "GangSplit", "Admission", split.String())
			s.wakeElasticLocked()
			s.wakeNextGangLocked()
		}
		return refusal.Status(fwk.UnschedulableAndUnresolvable, split)
	}
	s.releasedLocked(g, splitHolder)
	return s.gangIncompleteLocked(g, k)
}

// split tells whether a gang's pods cannot be admitted as one gang: some
// name another scheduler, or they resolve to different queues.
func (g *gangEntry) split() bool { return len(g.foreign) > 0 || len(g.queues) > 1 }

// splitLocked says why a gang's pods cannot be admitted as one gang, or nil.
func splitLocked(g *gangEntry, scheduler string) refusal.Refusal {
	if len(g.foreign) > 0 {
		others := slices.Sorted(maps.Values(g.foreign))
		return refusal.GangSplitScheduler{Gang: string(g.key), Others: others, Scheduler: scheduler}
	}
	if len(g.queues) > 1 {
		return refusal.GangSplitQueues{Gang: string(g.key), Queues: maps.Clone(g.queues)}
	}
	return nil
}

// podGroupRef is what an event about a gang's PodGroup points at.
func podGroupRef(g *gangEntry) *corev1.ObjectReference {
	ns, name := g.key.Split()
	apiVersion := schedv1alpha1.SchemeGroupVersion.String()
	if g.key.Native() {
		apiVersion = schedulingv1beta1.SchemeGroupVersion.String()
	}
	ref := &corev1.ObjectReference{APIVersion: apiVersion, Kind: "PodGroup", Namespace: ns, Name: name}
	if g.group != nil {
		ref.UID = g.group.UID
	}
	return ref
}

// PodGroupRef is what an event about gang k's PodGroup points at.
func (s *State) PodGroupRef(k gang.Key) *corev1.ObjectReference {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if g := s.books.gangs[k]; g != nil {
		return podGroupRef(g)
	}
	return podGroupRef(&gangEntry{key: k})
}
