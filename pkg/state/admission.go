package state

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
)

// GangView is a copy of what admission checks read of a gang.
type GangView struct {
	Key gang.Key
	// Group is the PodGroup as last delivered by the informer (read only).
	Group *schedv1alpha1.PodGroup
	// Members are its live pods of Cardinal's profile; Placed those placed.
	Members, Placed int
}

// Gang returns a copy of a gang's numbers; false if it has no PodGroup.
func (s *State) Gang(k gang.Key) (GangView, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.gangs[k]
	if g == nil || g.group == nil {
		return GangView{Key: k}, false
	}
	return GangView{Key: k, Group: g.group, Members: len(g.members), Placed: len(g.placed)}, true
}

// MinToAdmit starts an admission check of a gang's pod (the quota plugins'
// PreEnqueue): it returns the pod's gang and how many more placed pods its
// min needs, or 0 when there is nothing to check: no gang, no PodGroup (the
// gang plugin says so), or its min placed, which ends holder's hold. Before
// the state has synced, st turns the pod away until it has (Defer).
func (s *State) MinToAdmit(pod *corev1.Pod, holder string) (v GangView, missing int, st *fwk.Status) {
	k, ok := gang.Of(pod)
	if !ok {
		return GangView{}, 0, nil
	}
	if !s.Synced() {
		return GangView{}, 0, s.Defer(pod)
	}
	if v, ok = s.Gang(k); !ok {
		return v, 0, nil
	}
	if missing = int(v.Group.Spec.MinMember) - v.Placed; missing <= 0 {
		s.Release(k, holder)
		return v, 0, nil
	}
	return v, missing, nil
}

// Hold marks a gang held back by an admission check (holder), for reason,
// because pod's queue has no room for the rest of its min, and tells
// whether that holder's reason changed, so the caller records an event
// only then. The pod waits for room in queue (WaitForRoom). A held gang is
// not about to be placed, so it keeps nobody's elastic pods waiting (SPEC
// §2.4, §3.4): they are woken, later, from the outbox, never from inside
// the scheduling queue's call.
func (s *State) Hold(pod *corev1.Pod, k gang.Key, holder, reason, queue string, usesCards bool) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gangLocked(k)
	wasHeld := len(g.held) > 0
	changed = s.heldLocked(g, holder, reason)
	if !wasHeld {
		s.wakeElasticLocked()
		s.wakeNextGangLocked()
	}
	s.waitForRoomLocked(pod, queue, usesCards)
	s.refreshGangLocked(g)
	return changed
}

// Release marks a gang no longer held back by holder.
func (s *State) Release(k gang.Key, holder string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gangs[k]; g != nil {
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
	s.deferred[pod.UID] = pod
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for Cardinal's view of the cluster to load (scheduler starting)")
}

// splitHolder holds a gang whose pods cannot be admitted as one.
const splitHolder = "gang"

// AdmitGang is the gang plugin's PreEnqueue (SPEC §2.1): a gang's pods are
// kept out of the scheduling queue until its PodGroup exists and minMember
// pods of it do. A gang that can never be placed as one is held, with an
// event on its PodGroup that says what to fix: pods that resolve to
// different queues (one gang is charged to one queue), or pods that name
// another scheduler (no scheduler can place it all or nothing).
func (s *State) AdmitGang(pod *corev1.Pod) *fwk.Status {
	k, ok := gang.Of(pod)
	if !ok {
		return nil
	}
	if !s.Synced() {
		return s.Defer(pod)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensurePodLocked(pod)
	g := s.gangs[k]
	if g == nil || g.group == nil {
		st := s.gangIncompleteLocked(g, k)
		if s.missing[podGroupsAPI] != "" {
			// kube-scheduler records no event for a pod PreEnqueue turns away.
			s.reportLocked(podRef(pod), "PodGroupsUnreadable", "Admission", st.Message())
		}
		return st
	}
	if reason := splitReasonLocked(g, s.settings.SchedulerName); reason != "" {
		if s.heldLocked(g, splitHolder, reason) {
			s.eventLocked(podGroupRef(g), corev1.EventTypeWarning, "GangSplit", "Admission", reason)
			s.wakeElasticLocked()
			s.wakeNextGangLocked()
		}
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	s.releasedLocked(g, splitHolder)
	return s.gangIncompleteLocked(g, k)
}

// splitReasonLocked says why a gang's pods cannot be admitted as one gang, or "".
func splitReasonLocked(g *gangEntry, scheduler string) string {
	if len(g.foreign) > 0 {
		others := make([]string, 0, len(g.foreign))
		for _, p := range g.foreign {
			others = append(others, p)
		}
		sort.Strings(others)
		return fmt.Sprintf("gang %s has pods that name another scheduler: %s; every pod of a gang must set schedulerName: %s, or none of it can be placed all or nothing",
			g.key, strings.Join(others, ", "), scheduler)
	}
	if len(g.queues) > 1 {
		parts := make([]string, 0, len(g.queues))
		for q, n := range g.queues {
			parts = append(parts, fmt.Sprintf("%s (%d pods)", q, n))
		}
		sort.Strings(parts)
		return fmt.Sprintf("gang %s's pods resolve to different queues: %s; set the label %s on the PodGroup so the gang is charged to one queue",
			g.key, strings.Join(parts, ", "), v1alpha1.QueueLabel)
	}
	return ""
}

// podGroupRef is what an event about a gang's PodGroup points at.
func podGroupRef(g *gangEntry) *corev1.ObjectReference {
	ns, name := g.key.Split()
	ref := &corev1.ObjectReference{APIVersion: schedv1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup", Namespace: ns, Name: name}
	if g.group != nil {
		ref.UID = g.group.UID
	}
	return ref
}

// PodGroupRef is what an event about gang k's PodGroup points at.
func (s *State) PodGroupRef(k gang.Key) *corev1.ObjectReference {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if g := s.gangs[k]; g != nil {
		return podGroupRef(g)
	}
	return podGroupRef(&gangEntry{key: k})
}
