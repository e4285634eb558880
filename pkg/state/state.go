// Package state is Cardinal's one scheduling state: what every plugin, the
// status writers, metrics and tools decide from. It is fed by informers and
// by the plugins' Reserve and Unreserve, keyed by pod UID with idempotent
// add and remove, so nothing is counted twice or lost and it rebuilds from
// the cluster after a restart.
//
// What it knows:
//   - pods: queue, preemptibility (three-way), priority, gang, role in the
//     gang (min member or elastic), charge in resources and cards, and where
//     they are placed (reserved by this scheduler, or bound);
//   - gangs: their PodGroup, members, placed pods in rank order, and where
//     they stand (assembling, backing off, held by an admission check);
//   - queues: spec, allocated (bound and reserved), the non-preemptible and
//     elastic parts of it, pending demand, per resource and per card model,
//     and the deserved share computed from them;
//   - nodes: card models and capacity.
//
// Every number is a function of what the API shows (and of this scheduler's
// own reservations), never of the order things happened in, so it is the
// same after a restart: a placed pod of a gang is elastic when it is not
// among the minMember oldest placed pods (pkg/gang's rank), and a pod's
// cards are counted by its node's labels.
//
// One lock guards it all; helpers that expect it held end in Locked. No API
// call is made under it, and nothing under it calls into the scheduling
// queue: what must happen there (waking pods, allowing or rejecting pods
// waiting at Permit, events) is queued and done by one goroutine after the
// lock is released (outbox.go). Plugins may therefore call the state from
// PreEnqueue, the queue's Less and queueing hints, which the scheduling
// queue runs under its own lock.
package state

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	configv1 "cardinal.dev/cardinal/apis/config/v1"
	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/workload"
)

// Settings are the choices several plugins share. They are decided once,
// from the scheduler configuration (pkg/settings), before any plugin is
// built, whichever plugins are enabled.
type Settings struct {
	// SchedulerName is the profile whose pods Cardinal schedules.
	SchedulerName string
	// DefaultQueue is the queue of pods that name none (SPEC §1.1).
	DefaultQueue string
	// PreemptibleBelowPriority makes unlabelled work below it preemptible (SPEC §5.1).
	PreemptibleBelowPriority int32
	// CardUnlimitedCPUMemory: pods that use cards are not charged cpu or memory.
	CardUnlimitedCPUMemory bool
	// GangBackoff is how long a gang that failed waits before it is tried again.
	GangBackoff time.Duration
	// StaleGangAfter is how long a gang may stay bound below its min before
	// it gives back what it holds (SPEC §2.6): the Permit wait plus
	// staleGangSeconds; 0 leaves such gangs alone.
	StaleGangAfter time.Duration
	// CardRoomFirst lets the card Filter refuse a node without room for a
	// pod's cards itself, so that NodeResourcesFit's slower Filter is not
	// run on it: only while NodeResourcesFit would refuse the same node
	// (it is enabled and ignores no resource). pkg/settings sets it from
	// the configuration.
	CardRoomFirst bool
	// GroupedKinds are the workload kinds whose pods the grouper groups
	// into gangs (SPEC §7); empty when it groups none. A pod it may group
	// waits until it has ruled (grouping.go).
	GroupedKinds workload.Kinds
	// ReadOnly makes a state that only looks: a tool's copy rebuilt from
	// the API (kubectl cardinal) writes nothing to the cluster and acts on
	// no scheduling queue.
	ReadOnly bool
}

// DefaultSettings are the settings of a configuration that sets nothing.
func DefaultSettings() Settings {
	return Settings{
		SchedulerName:            "cardinal-scheduler",
		DefaultQueue:             v1alpha1.DefaultQueueName,
		PreemptibleBelowPriority: configv1.DefaultPreemptibleBelowPriority,
		GangBackoff:              time.Duration(configv1.DefaultPodGroupBackoffSeconds) * time.Second,
		StaleGangAfter:           time.Duration(configv1.DefaultPermitWaitingTimeSeconds+configv1.DefaultStaleGangSeconds) * time.Second,
		GroupedKinds:             workload.NewKinds(workload.GroupableKinds...),
	}
}

// State is the one scheduling state. Build it with New.
//
// It coordinates parts that each do one job, all under one lock: the books
// (what is charged where), the waits (pods turned away, by what lets them
// in), gang assembly (which gang is being placed), preemptions under way,
// and the notes it leaves for the status writers. A change reaches every
// part it concerns through State's methods; the parts know nothing of each
// other, of the lock, or of the framework: every method of a part expects
// State's lock held, so only State's own helpers carry the Locked suffix.
// The wiring to the cluster (wiring.go) decides nothing.
type State struct {
	settings Settings
	clock    clock.WithDelayedExecution

	// mu guards the parts below; the few fields read without it say so.
	mu          sync.RWMutex
	books       books
	waits       waits
	assembly    assembly
	preemptions preemptions
	notes       notes
	leader      leadership

	out    *outbox
	wiring wiring
}

// New returns an empty state with settings.
func New(settings Settings) *State {
	return NewWithClock(settings, clock.RealClock{})
}

// NewWithClock returns an empty state that tells time by clk. Tests feed it
// through its On... methods, as the informers would, and run what it queued
// for the framework with Flush.
func NewWithClock(settings Settings, clk clock.WithDelayedExecution) *State {
	s := &State{
		settings:    settings,
		clock:       clk,
		books:       newBooks(),
		waits:       newWaits(),
		assembly:    newAssembly(),
		preemptions: newPreemptions(),
		notes:       newNotes(),
		wiring:      newWiring(),
	}
	s.out = newOutbox()
	return s
}

// Configure replaces the settings. It is called once, before the plugins are
// built and before any informer delivers anything.
func (s *State) Configure(settings Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings = settings
}

// SetPermitPlugin names the plugin whose Permit holds gangs' members, for
// the state to allow or reject them in its name.
func (s *State) SetPermitPlugin(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wiring.permitPlugin = name
}

// Settings returns the settings.
func (s *State) Settings() Settings {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.settings
}

// Changed is signalled whenever a queue's numbers may have changed; the
// status writer waits on it.
func (s *State) Changed() <-chan struct{} { return s.notes.changed }

func (s *State) notifyLocked() {
	s.books.deserved.dirty = true
	select {
	case s.notes.changed <- struct{}{}:
	default:
	}
}

// Synced tells whether every informer feeding the state has delivered its
// initial list, so no decision is made on counts still being rebuilt after
// a start (SPEC §3.1 "across restarts"). Once true it stays true. Attach
// registers the informers before the scheduler starts any, so it is never
// true too early; a state fed by hand has none and is synced at once.
func (s *State) Synced() bool {
	if s.wiring.synced.Load() {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wiring.synced.Load() {
		return true
	}
	for _, src := range s.wiring.sources {
		if !src.synced() && (src.api == "" || s.wiring.missing[src.api] == "") {
			return false
		}
	}
	// Placements read before now are judged before anything sees the
	// state synced.
	s.verifyPlacementsLocked()
	s.wiring.synced.Store(true)
	return true
}

// WaitForSync waits until Synced, or until ctx ends.
func (s *State) WaitForSync(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return s.Synced(), nil
	})
}
