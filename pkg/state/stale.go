package state

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/gang"
)

// A gang bound below its min holds cards it cannot use: a crash mid-bind,
// a bind that failed after others of its min bound, members deleted or
// failed and not replaced. Found so for longer than the Permit wait plus
// staleGangSeconds, it gives back what it holds (SPEC §2.6): its bound
// pods are evicted, leader only (pkg/stalegang, which also counts members
// that finished their work towards the min: the state never sees them).
// Elastic gangs at or above min are never touched.

// StaleGang is a gang found bound below its min for too long.
type StaleGang struct {
	Key gang.Key
	Min int
	// Bound counts its bound pods.
	Bound int
	Since time.Time
	// Pods are its bound pods, to evict.
	Pods []*corev1.Pod
}

// Note says in words why the gang gives back what it holds.
func (g StaleGang) Note(now time.Time) string {
	return fmt.Sprintf("gang %s has had %d of its minMember %d pods bound for %s: its bound pods are evicted so that their cards do not sit idle; the gang is placed again whole when its pods are recreated",
		g.Key, g.Bound, g.Min, now.Sub(g.Since).Round(time.Second))
}

// watchBelowMinLocked notes when a gang is found bound below its min, and
// forgets it when it is not any more.
func (s *State) watchBelowMinLocked(g *gangEntry) {
	// Members reserved now and then (a replacement that tries, waits at
	// Permit and gives back) do not restart the clock, or such a gang would
	// never be given back; members terminating count as bound until gone.
	bound := len(g.placed) - g.reserved
	s.assembly.watchBelowMin(g, g.group != nil && bound > 0 && bound+g.terminating < g.min(), s.clock.Now())
}

// StaleGangs lists the gangs bound below their min for longer than the
// settings' StaleGangAfter, in O(gangs below min).
func (s *State) StaleGangs() []StaleGang {
	after := s.settings.StaleGangAfter
	if after <= 0 {
		return nil
	}
	now := s.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []StaleGang
	for k := range s.assembly.belowMin {
		g := s.books.gangs[k]
		if g == nil || g.belowMinSince.IsZero() || now.Sub(g.belowMinSince) < after || len(g.placed) >= g.min() {
			continue // not yet, or its min is binding now
		}
		sg := StaleGang{Key: k, Min: g.min(), Since: g.belowMinSince}
		for _, e := range g.placed {
			if !e.bound {
				continue
			}
			sg.Bound++
			if _, victim := s.preemptions.victimOf[e.pod.UID]; !victim {
				sg.Pods = append(sg.Pods, e.pod) // a victim is being evicted already
			}
		}
		out = append(out, sg)
	}
	return out
}

// GivingBack reports on the gang and its pods that it gives back what it
// holds (event GangBelowMin), and returns what it said.
func (s *State) GivingBack(g StaleGang) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	note := g.Note(s.clock.Now())
	if e := s.books.gangs[g.Key]; e != nil {
		s.eventLocked(podGroupRef(e), corev1.EventTypeWarning, "GangBelowMin", "Evicting", note)
	}
	for _, p := range g.Pods {
		s.eventLocked(podRef(p), corev1.EventTypeWarning, "GangBelowMin", "Evicting", note)
	}
	return note
}
