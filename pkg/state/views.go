package state

import (
	"fmt"
	"sort"
	"time"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/metrics"
)

// GangStatus is a copy of what the state knows of one gang, for people:
// kubectl cardinal, PodGroup annotations and metrics.
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
	// Held are the admission checks holding it back: holder -> reason.
	Held map[string]string
}

// Elastic is how many of its placed pods are beyond its min.
func (g GangStatus) Elastic() int { return max(g.Placed-g.Min, 0) }

// HeldReason is the first reason, in a fixed order, that an admission
// check holds the gang back for; "" when none does.
func (g GangStatus) HeldReason() string {
	if r, ok := g.Held[splitHolder]; ok {
		return r
	}
	holders := make([]string, 0, len(g.Held))
	for h := range g.Held {
		holders = append(holders, h)
	}
	sort.Strings(holders)
	if len(holders) == 0 {
		return ""
	}
	return g.Held[holders[0]]
}

// BackingOff says why the gang is not tried before its backoff ends at
// now, or "" when it is not backing off. The gang's pods are refused with
// the same sentence.
func (g GangStatus) BackingOff(now time.Time) string {
	if !now.Before(g.BackoffUntil) {
		return ""
	}
	return backoffSentence(g.Key, g.BackoffUntil, g.LastFailure)
}

func backoffSentence(k gang.Key, until time.Time, failure string) string {
	return fmt.Sprintf("gang %s is backing off until %s after: %s", k, until.UTC().Format(time.RFC3339), failure)
}

func (s *State) gangStatusLocked(g *gangEntry) GangStatus {
	v := GangStatus{
		Key: g.key, Group: g.group, Members: len(g.members), Placed: len(g.placed), Reserved: g.reserved,
		Assembling: s.assembling.Has(g.key), Parked: len(s.parkedGangs[g.key]),
		BackoffUntil: g.backoffUntil, LastFailure: g.lastFailure,
	}
	if g.group != nil {
		v.Min = int(g.group.Spec.MinMember)
	}
	if len(g.held) > 0 {
		v.Held = make(map[string]string, len(g.held))
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
	g := s.gangs[k]
	if g == nil {
		return GangStatus{Key: k}, false
	}
	return s.gangStatusLocked(g), true
}

// Gangs returns a copy of every gang's numbers, ordered by key. O(gangs):
// for people and scrapes, never for a scheduling cycle.
func (s *State) Gangs() []GangStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]GangStatus, 0, len(s.gangs))
	for _, g := range s.gangs {
		out = append(out, s.gangStatusLocked(g))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Now is the state's clock.
func (s *State) Now() time.Time { return s.clock.Now() }

// NodeModels counts nodes per card model they carry, and nodes with card
// resources that no product label names (SPEC §1.4).
func (s *State) NodeModels() (perModel map[string]int, unlabelled int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	perModel = map[string]int{}
	for _, n := range s.nodes {
		seen := map[string]bool{}
		for _, c := range n.models.Cards {
			if !seen[c.Model] {
				seen[c.Model] = true
				perModel[c.Model]++
			}
		}
		if len(n.models.Unlabelled) > 0 {
			unlabelled++
		}
	}
	return perModel, unlabelled
}

// GangNotes returns a channel that is signalled (without blocking) when
// some gang's admission holds or backoff changed; TakeGangNotes then says
// which. The PodGroup status writer re-reads those gangs: a held gang's
// pods are never tried, so nothing on them changes to tell it.
func (s *State) GangNotes() <-chan struct{} { return s.gangNotes }

// TakeGangNotes returns and forgets the gangs noted since the last call.
func (s *State) TakeGangNotes() []gang.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]gang.Key, 0, len(s.notedGangs))
	for k := range s.notedGangs {
		out = append(out, k)
	}
	clear(s.notedGangs)
	return out
}

func (s *State) noteGangLocked(k gang.Key) {
	if s.settings.ReadOnly {
		return
	}
	s.notedGangs[k] = struct{}{}
	select {
	case s.gangNotes <- struct{}{}:
	default:
	}
}

// holdKinds names, for metrics, what each admission check holds gangs for.
var holdKinds = map[string]string{
	splitHolder:         "gang-split",
	"CardinalQueue":     "queue-quota",
	"CardinalCardQuota": "card-quota",
}

// heldLocked records that holder now holds gang g for reason; it tells
// whether that is news (a new hold or a new reason).
func (s *State) heldLocked(g *gangEntry, holder, reason string) (changed bool) {
	old, had := g.held[holder]
	g.held[holder] = reason
	if had && old == reason {
		return false
	}
	if !had && !s.settings.ReadOnly {
		kind := holdKinds[holder]
		if kind == "" {
			kind = holder
		}
		metrics.AdmissionsHeld.WithLabelValues(kind).Inc()
	}
	s.noteGangLocked(g.key)
	return true
}

// releasedLocked records that holder no longer holds gang g.
func (s *State) releasedLocked(g *gangEntry, holder string) {
	if _, had := g.held[holder]; had {
		delete(g.held, holder)
		s.noteGangLocked(g.key)
	}
}

// observeMinBoundLocked observes, once per gang, how long it waited from
// its PodGroup's creation until its min was bound. Gangs found bound while
// the state loads (a restart) are not observed: their wait is not known.
func (s *State) observeMinBoundLocked(g *gangEntry) {
	if g.minBound || g.group == nil || len(g.placed)-g.reserved < g.min() {
		return
	}
	g.minBound = true
	if s.settings.ReadOnly || !s.synced.Load() {
		return
	}
	if created := g.group.CreationTimestamp.Time; !created.IsZero() {
		metrics.GangWait.Observe(s.clock.Since(created).Seconds())
	}
}
