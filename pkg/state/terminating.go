package state

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// terminatingLocked records that a placed pod is being deleted. Like
// Kubernetes' ResourceQuota, Cardinal keeps charging it until it is gone:
// a job that checkpoints for ten minutes on SIGTERM still holds its cards,
// and replacements wait for them rather than push real use past the
// queue's capability (SPEC §3.7). It leaves its gang at once, though: it
// is no longer one of the gang's min, so a replacement waits at Permit for
// the rest of the min as any member does, and the gang's ranks close up.
// It is no victim for preemption either (PlacedIn, freeable): it is going.
func (s *State) terminatingLocked(pod *corev1.Pod, owner func() map[string]string) {
	e := s.books.pods[pod.UID]
	if e != nil && e.terminating {
		s.books.setPod(e, pod)
		s.noteEvictedLocked(e)
		return
	}
	// Brought up to date first (bound; or, first seen after a restart,
	// booked as its binding recorded), then taken out of its gang.
	e = s.upsertPodLocked(pod, owner)
	s.chargeLocked(e, -1)
	elastic := e.elastic
	s.forgetWaitLocked(e)
	s.preemptions.claimDone(pod.UID)
	g := s.books.gangs[e.Gang]
	if g != nil {
		g.dropMember(e)
		s.removePlacedLocked(g, e)
	}
	e.terminating, e.elastic = true, elastic // charged as it was booked
	s.chargeLocked(e, 1)
	s.noteEvictedLocked(e)
	if g == nil {
		return
	}
	g.terminating++
	if g.group != nil && g.triable() < g.min() {
		// Members waiting at Permit cannot complete without it.
		s.failLocked(g, fmt.Sprintf("it has %d of its minMember %d pods left", g.triable(), g.min()), false)
	}
	s.refreshGangLocked(g)
}

// noteEvictedLocked keeps a placed pod a scheduler's preemption is
// deleting among books.evicted.
func (s *State) noteEvictedLocked(e *podEntry) {
	if e.placed() && EvictedByScheduler(e.pod) {
		s.books.evicted[e.pod.UID] = e
	}
}

// EvictedByScheduler tells a pod being deleted by a scheduler's preemption:
// its DisruptionTarget condition says so.
func EvictedByScheduler(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}
