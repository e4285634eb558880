package state

import "cardinal.dev/cardinal/pkg/gang"

// notes are what the state leaves for those who report on it: a signal
// when queue numbers change (the Queue status writer), the gangs whose
// holds or backoff changed (the PodGroup status writer), and the last
// problem reported per object, so an object updated all the time is not
// reported each time (reports.go).
type notes struct {
	// changed is signalled (without blocking) whenever queue numbers change.
	changed chan struct{}
	// gangNotes is signalled (without blocking) when gangs gains one.
	gangNotes chan struct{}
	gangs     map[gang.Key]struct{}
	reported  map[string]string
}

func newNotes() notes {
	return notes{
		changed:   make(chan struct{}, 1),
		gangNotes: make(chan struct{}, 1),
		gangs:     map[gang.Key]struct{}{},
		reported:  map[string]string{},
	}
}

// GangNotes returns a channel that is signalled (without blocking) when
// some gang's admission holds or backoff changed; TakeGangNotes then says
// which. The PodGroup status writer re-reads those gangs: a held gang's
// pods are never tried, so nothing on them changes to tell it.
func (s *State) GangNotes() <-chan struct{} { return s.notes.gangNotes }

// TakeGangNotes returns and forgets the gangs noted since the last call.
func (s *State) TakeGangNotes() []gang.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]gang.Key, 0, len(s.notes.gangs))
	for k := range s.notes.gangs {
		out = append(out, k)
	}
	clear(s.notes.gangs)
	return out
}

func (s *State) noteGangLocked(k gang.Key) {
	if !s.records() {
		return
	}
	s.notes.gangs[k] = struct{}{}
	select {
	case s.notes.gangNotes <- struct{}{}:
	default:
	}
}
