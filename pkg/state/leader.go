package state

import "sync/atomic"

// leadership is whether this process leads the scheduler. Only the leader
// records metrics of the state and notes gangs for the status writers: a
// standby's queue runs admission too, but nothing it holds is tried again.
// It is learned the first of two ways: the status writers see the lease
// (SetLeading), or this process places a pod (only the leader schedules).
// What follows from it is decided in records, and nowhere else.
type leadership struct {
	leading atomic.Bool
}

// placed learns from a placement that this process leads.
func (l *leadership) placed() {
	if !l.leading.Load() {
		l.leading.Store(true)
	}
}

// SetLeading says whether this process leads the scheduler; the status
// writers set it once they see the lease.
func (s *State) SetLeading(leading bool) { s.leader.leading.Store(leading) }

// Leading tells whether this process leads the scheduler.
func (s *State) Leading() bool { return s.leader.leading.Load() }

// records tells whether this process records metrics of the state and
// notes gangs for the status writers: it leads, and it is not a tool's
// read-only copy of the state.
func (s *State) records() bool { return !s.settings.ReadOnly && s.leader.leading.Load() }

// Records is records for those outside the lock: the metrics collector
// serves the state's numbers only when it is true.
func (s *State) Records() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.records()
}
