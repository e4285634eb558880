package state

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/refusal"
)

// A pod is placed at Reserve, charged to its queue and counted for its
// gang; a gang's members wait at Permit until its min is placed, and are
// let through together.

// ReserveAsChecked is Reserve for a pod checked as checked (nil: not
// checked): one whose labels changed it since is refused, placed or not,
// so that what is booked is what was checked.
func (s *State) ReserveAsChecked(pod *corev1.Pod, node string, checked *Checked) *fwk.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Only the replica that leads schedules: it knows it leads from its
	// first placement, before the status writers see the lease.
	s.leader.placed()
	e, recorded := s.ensurePodLocked(pod)
	if !recorded {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("pod %s/%s was deleted", pod.Namespace, pod.Name))
	}
	if checked != nil {
		if why := changedSinceLocked(e, checked.Queue, checked.Class); why != nil {
			// Its change is already here: no later event would wake it.
			s.activateLocked(slices.Values([]*corev1.Pod{e.pod}))
			return refusal.Status(fwk.Unschedulable, why)
		}
	}
	if e.placed() {
		return nil
	}
	if e.Gang != "" {
		g := s.books.gangs[e.Gang]
		if g == nil || g.group == nil {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s was deleted", e.Gang))
		}
		if g.needsMin() && (e.tryAttempt != g.attempt || g.triable() < g.min()) {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
				"gang %s gave up the attempt this pod was part of (%s); it is tried again when it can complete", e.Gang, g.lastFailure))
		}
	}
	s.placeLocked(e, node, false)
	return nil
}

// Unreserve gives back exactly what Reserve charged. If that leaves the
// attempt of the pod's gang below its min, the attempt has failed: the
// gang's other waiting members give back their nodes too, and the gang
// backs off (SPEC §2.2). Idempotent, like Reserve.
func (s *State) Unreserve(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.books.pods[pod.UID]
	if e == nil || !e.placed() || e.bound {
		return
	}
	s.unplaceLocked(e)
	if g := s.books.gangs[e.Gang]; g != nil && g.needsMin() && e.tryAttempt == g.attempt {
		backoff := g.triable() >= g.min()
		if backoff {
			g.gaveUp++
		}
		s.failLocked(g, fmt.Sprintf("pod %s gave up its reservation (Permit timeout, rejection or failed bind)", pod.Name), backoff)
	}
}

// StillPlaced tells whether a pod on its way to bind should still bind: it
// is placed, and, in a gang, the attempt it joined has not failed since
// (a sibling gave up its place while this pod waited for a bind slot).
// Binding it then would leave its gang partly bound.
func (s *State) StillPlaced(pod *corev1.Pod) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.books.pods[pod.UID]
	if e == nil || !e.placed() {
		return false
	}
	g := s.books.gangs[e.Gang]
	return g == nil || e.tryAttempt == g.attempt
}

// Permit tells whether a pod's gang has its min placed. If so, the gang's
// members waiting at Permit are returned, to be allowed; if not, the pod
// waits, for its PodGroup's spec.scheduleTimeoutSeconds when set (timeout,
// else 0), and msg says why.
func (s *State) Permit(pod *corev1.Pod) (wait bool, timeout time.Duration, allow []types.UID, msg string) {
	k, ok := s.GangOf(pod)
	if !ok {
		return false, 0, nil, ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.books.gangs[k]
	if g == nil || g.group == nil {
		return false, 0, nil, ""
	}
	if g.needsMin() {
		if t := g.group.Spec.ScheduleTimeoutSeconds; t != nil && *t > 0 {
			timeout = time.Duration(*t) * time.Second // the plugin caps it
		}
		return true, timeout, nil, fmt.Sprintf("gang %s has %d of its min %d placed", k, len(g.placed), g.min())
	}
	return false, 0, allowReservedLocked(g), ""
}

func reservedLocked(g *gangEntry) []types.UID {
	out := make([]types.UID, 0, g.reserved)
	for _, e := range g.placed {
		if !e.bound {
			out = append(out, e.pod.UID)
		}
	}
	return out
}

// allowReservedLocked marks a gang's reserved members as let through
// Permit and returns them, to be allowed. Under the read lock is enough.
func allowReservedLocked(g *gangEntry) []types.UID {
	for _, e := range g.placed {
		if !e.bound {
			e.allowed.Store(true)
		}
	}
	return reservedLocked(g)
}
