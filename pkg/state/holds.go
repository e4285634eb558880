package state

import (
	"slices"

	"cardinal.dev/cardinal/pkg/metrics"
	"cardinal.dev/cardinal/pkg/refusal"
)

// A gang is held back by the profile's admission checks (PreEnqueue) while
// one of them says its min cannot fit (admission.go); the holds are kept on
// the gang, by holder, with why.

// holdOrder is the order the profile's admission checks (PreEnqueue) run
// in: the gang's own, then queue quota, then card quota.
var holdOrder = []string{splitHolder, "CardinalQueue", "CardinalCardQuota"}

// holdKinds names, for metrics, what each admission check holds gangs for.
var holdKinds = map[string]string{
	splitHolder:         "gang-split",
	"CardinalQueue":     "queue-quota",
	"CardinalCardQuota": "card-quota",
}

// HoldKind names, for metrics, what the admission check holder holds
// gangs for: queue-quota, card-quota or gang-split.
func HoldKind(holder string) string {
	if kind := holdKinds[holder]; kind != "" {
		return kind
	}
	return holder
}

// heldLocked records that holder now holds gang g for why; it tells
// whether that is news (a new hold or a new reason). The checks that run
// after holder are not run while it holds: their holds are dropped, so
// none stays behind once what it said is mended.
func (s *State) heldLocked(g *gangEntry, holder string, why refusal.Refusal) (changed bool) {
	if i := slices.Index(holdOrder, holder); i >= 0 {
		for _, later := range holdOrder[i+1:] {
			s.releasedLocked(g, later)
		}
	}
	g.waits = nil // a held gang waits for its queue, not for another gang
	old, had := g.held[holder]
	g.held[holder] = why
	if had && old.String() == why.String() {
		return false
	}
	if !had && s.records() {
		metrics.AdmissionsHeld.WithLabelValues(HoldKind(holder)).Inc()
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
