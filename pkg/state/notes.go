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
