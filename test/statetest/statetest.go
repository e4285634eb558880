// Package statetest builds Cardinal's scheduling state for unit tests:
// empty, for the test profile, on a fake clock.
package statetest

import (
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
)

// T0 is when the fake clock of New starts.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// New returns an empty scheduling state for Cardinal's test profile
// (builder.SchedulerName) with default settings, changed by each of
// settings in turn, on a fake clock set to T0.
func New(settings ...func(*state.Settings)) *state.State {
	s, _ := WithClock(settings...)
	return s
}

// WithClock is New, and returns the state's fake clock too.
func WithClock(settings ...func(*state.Settings)) (*state.State, *testingclock.FakeClock) {
	s := state.DefaultSettings()
	s.SchedulerName = builder.SchedulerName
	for _, f := range settings {
		f(&s)
	}
	clk := testingclock.NewFakeClock(T0)
	return state.NewWithClock(s, clk), clk
}
