package state

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/metrics"
	"cardinal.dev/cardinal/pkg/refusal"
)

// GangStatus is a copy of what the state knows of one gang: what admission
// checks judge it by, and what people see of it (kubectl cardinal, PodGroup
// annotations, metrics).
type GangStatus struct {
	Key gang.Key
	// Group is the PodGroup as last delivered (read only); nil if not seen.
	Group *schedv1alpha1.PodGroup
	// Min is the PodGroup's minMember (0 without a PodGroup).
	Min int
	// Members are the gang's live pods of Cardinal's profile; Placed those
	// reserved or bound, Reserved those placed but not bound yet.
	Members, Placed, Reserved int
	// Assembling: members wait at Permit for the rest of its min.
	Assembling bool
	// Parked counts its pods waiting for another gang (assembly.go).
	Parked int
	// BackoffUntil, when in the future, is when it is tried again after
	// LastFailure.
	BackoffUntil time.Time
	LastFailure  string
	// Waits is why its pods were last turned away for another gang (one
	// being placed, or one that needs its min); nil once one was let
	// through, or turned away for the gang's own state, or held.
	Waits refusal.Refusal
	// Held are the admission checks holding it back: holder -> why.
	Held map[string]refusal.Refusal
	// MinBound: its min was bound, and it has not lost every placed pod since.
	MinBound bool
	// WaitingSince is when it began to wait for its min: its PodGroup's
	// creation, or when it lost every placed pod (evicted whole, a next
	// wave of a job).
	WaitingSince time.Time
}

// Waiting: the gang has live pods and has not yet had its min bound.
func (g GangStatus) Waiting() bool { return g.Group != nil && !g.MinBound && g.Members > 0 }

// Elastic is how many of its placed pods are beyond its min.
func (g GangStatus) Elastic() int { return max(g.Placed-g.Min, 0) }

// HeldBy is why the first admission check, in the order the profile runs
// them, holds the gang back; nil when none does.
func (g GangStatus) HeldBy() refusal.Refusal {
	for _, h := range holdOrder {
		if r, ok := g.Held[h]; ok {
			return r
		}
	}
	for _, r := range g.Held {
		return r
	}
	return nil
}

// BackingOff says why the gang is not tried before its backoff ends at
// now, or nil when it is not backing off. The gang's pods are refused with
// the same refusal.
func (g GangStatus) BackingOff(now time.Time) refusal.Refusal {
	if !now.Before(g.BackoffUntil) {
		return nil
	}
	return backingOff(g.Key, g.BackoffUntil, g.LastFailure)
}

func backingOff(k gang.Key, until time.Time, failure string) refusal.BackingOff {
	return refusal.BackingOff{Gang: string(k), Until: until, After: failure}
}

func (s *State) gangStatusLocked(g *gangEntry) GangStatus {
	v := GangStatus{
		Key: g.key, Group: g.group, Members: len(g.members), Placed: len(g.placed), Reserved: g.reserved,
		Assembling: s.assembly.assembling.Has(g.key), Parked: len(s.waits.parkedGangs[g.key]),
		BackoffUntil: g.backoffUntil, LastFailure: g.lastFailure, Waits: g.waits,
		MinBound:     g.group != nil && g.minBound == boundKey(g.group),
		WaitingSince: waitingSince(g),
	}
	if g.group != nil {
		v.Min = int(g.group.Spec.MinMember)
	}
	if len(g.held) > 0 {
		v.Held = make(map[string]refusal.Refusal, len(g.held))
		for h, r := range g.held {
			v.Held[h] = r
		}
	}
	return v
}

// GangStatus returns a copy of one gang's numbers; false if the state
// knows nothing of it.
func (s *State) GangStatus(k gang.Key) (GangStatus, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.books.gangs[k]
	if g == nil {
		return GangStatus{Key: k}, false
	}
	return s.gangStatusLocked(g), true
}

// Gangs returns a copy of every gang's numbers, ordered by key. O(gangs):
// for people and scrapes, never for a scheduling cycle.
func (s *State) Gangs() []GangStatus {
	s.mu.RLock()
	out := make([]GangStatus, 0, len(s.books.gangs))
	for _, g := range s.books.gangs {
		out = append(out, s.gangStatusLocked(g))
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Now is the state's clock.
func (s *State) Now() time.Time { return s.clock.Now() }

// observeMinBoundLocked observes, once per wait, how long a gang waited
// from its PodGroup's creation (or from losing every placed pod) until its
// min was bound. Gangs found bound while the
// state loads (a restart) are not observed: their wait is not known. A
// gang that loses every placed pod (evicted whole) waits anew.
func (s *State) observeMinBoundLocked(g *gangEntry) {
	if len(g.placed) == 0 && g.minBound != "" {
		g.minBound, g.waitSince = "", s.clock.Now()
	}
	if g.group == nil || g.minBound == boundKey(g.group) || len(g.placed)-g.reserved < g.min() {
		return
	}
	g.minBound = boundKey(g.group)
	g.narrowMissed = false // its next pods, a next wave, are narrowed anew
	g.gaveUp = 0
	if !s.records() || !s.wiring.synced.Load() {
		return
	}
	if since := waitingSince(g); !since.IsZero() {
		metrics.GangWait.Observe(s.clock.Since(since).Seconds())
	}
}

// boundKey tells PodGroups of one name apart: a PodGroup created anew
// waits anew.
func boundKey(pg *schedv1alpha1.PodGroup) types.UID {
	if pg.UID == "" {
		return "-"
	}
	return pg.UID
}

// waitingSince is when gang g began to wait for its min.
func waitingSince(g *gangEntry) time.Time {
	if !g.waitSince.IsZero() || g.group == nil {
		return g.waitSince
	}
	return g.group.CreationTimestamp.Time
}

// RecordBackoff notes, in a read-only state, a gang's backoff as the
// running scheduler wrote it on its PodGroup: only the scheduler knows it,
// and a gang backing off keeps nobody's elastic pods waiting. A state that
// schedules keeps its own.
func (s *State) RecordBackoff(k gang.Key, until time.Time, after string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.books.gangs[k]; g != nil && s.settings.ReadOnly {
		g.backoffUntil, g.lastFailure = until, after
	}
}
