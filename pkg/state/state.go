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
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	configv1 "cardinal.dev/cardinal/apis/config/v1"
	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
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
	}
}

// State is the one scheduling state. Build it with New.
type State struct {
	settings Settings
	clock    clock.WithDelayedExecution

	mu         sync.RWMutex
	pods       map[types.UID]*podEntry
	gangs      map[gang.Key]*gangEntry
	queues     map[string]*queueEntry
	nodes      map[string]*nodeEntry
	namespaces map[string]map[string]string // namespace -> labels
	// inNamespace indexes pods by namespace (a relabelled namespace moves them).
	inNamespace map[string]map[types.UID]*podEntry
	// podsOn indexes placed pods by node (a relabelled node recharges them).
	podsOn map[string]map[types.UID]*podEntry
	// podsByController indexes pods by their controller's UID (an owner's
	// preemptibility label reclassifies them, owners.go).
	podsByController map[types.UID]map[types.UID]*podEntry
	// foreign is the gang of each pod of another scheduler that joins one.
	foreign map[types.UID]gang.Key
	// cardResources are resources some node carries as cards beyond the well-known ones.
	cardResources map[corev1.ResourceName]bool
	// capacity is the sum of the nodes' allocatable; cardCapacity the cards of each model.
	capacity     quota.Resources
	cardCapacity map[string]int64
	// nodesByCard are, per card resource, the nodes that carry it under
	// each model (model "" for nodes whose cards of it have no product
	// label), so PreFilter can tell when every node would pass card Filter
	// and which nodes to narrow a pod to; modelLists the same as sorted
	// lists, made when first read after a change (nodes.go).
	nodesByCard map[corev1.ResourceName]map[string]map[string]struct{}
	modelLists  map[cardKey][]string
	// carriers counts, per resource, the nodes that have it allocatable.
	carriers map[corev1.ResourceName]int
	deserved deservedCache

	// Gang assembly (assembly.go).
	assembling  sets.Set[gang.Key]
	awaitingMin sets.Set[gang.Key]
	// belowMin are the gangs bound below their min (stale.go).
	belowMin      sets.Set[gang.Key]
	parkedGangs   map[gang.Key]map[types.UID]*corev1.Pod
	parkedElastic map[types.UID]*corev1.Pod
	// deferred are gang pods turned away by admission before the state synced.
	deferred map[types.UID]*corev1.Pod
	// unverified are pods booked from their placed-as annotation before the
	// state synced: whether their namespace may use the queue it names is
	// judged once namespaces and Queues are all known (placedas.go).
	unverified map[types.UID]*podEntry
	// waitingRoom are pods waiting for room in a queue, by queue;
	// waitingModels the card pods among them (waits.go).
	waitingRoom   map[string]map[types.UID]*corev1.Pod
	waitingModels map[types.UID]*corev1.Pod
	// waitingOwner are pending pods waiting for an owner to be seen, by
	// the owner ("ReplicaSet ns/name", as Facts.OwnerUnseen names it).
	waitingOwner map[string]map[types.UID]*corev1.Pod
	// preemptions under way, by preemptor key; victimOf and claimOf index
	// their victims and the members room is kept for (preempt.go).
	preemptions map[string]*preemption
	victimOf    map[types.UID]string
	claimOf     map[types.UID]string
	// unnominated are members whose kept room a sibling took and whose
	// nomination was cleared; a stale nomination that reaches the pod
	// later is cleared again (preempt.go).
	unnominated map[types.UID]struct{}
	// reported are the last problems reported per object (Queue and node
	// events), so an object updated all the time is not reported each time.
	reported map[string]string
	// renamedModels maps a card model's former name to its name now (MPS
	// shares, SPEC §1.4), as nodes show them, to tell Queues that still list
	// a former name.
	renamedModels map[string]string
	// lastGangWake is when a parked gang was last woken.
	lastGangWake time.Time
	// permitPlugin is the plugin whose Permit holds gangs' members.
	permitPlugin string

	// nodesGen counts changes to the set of nodes and their models, so a
	// cycle can tell whether what it read of them still holds.
	nodesGen atomic.Uint64
	// views is every node's card models at one nodes generation, made
	// anew on the first read after a change (NodeViews).
	views atomic.Pointer[nodeViews]
	// claimReads mirrors the room kept on each node for preemptors
	// (preempt.go), for Filter to read without the lock.
	claimReads sync.Map
	// claimNodes counts the nodes in claimReads.
	claimNodes atomic.Int64
	// gangCreated is when each gang's PodGroup was first seen created, for
	// the queue order: read without the lock, set once per gang.
	gangCreated sync.Map

	out *outbox
	// changed is signalled (without blocking) whenever queue numbers change.
	changed chan struct{}
	// gangNotes is signalled (without blocking) when notedGangs, the gangs
	// whose holds or backoff changed, gains one (views.go).
	gangNotes  chan struct{}
	notedGangs map[gang.Key]struct{}
	// leading: this process leads, so it records metrics and gang notes.
	leading atomic.Bool

	attachOnce sync.Once
	attachErr  error
	attached   atomic.Bool
	// preemption: CardinalPreemption runs in the profile (preempt.go).
	preemption atomic.Bool
	kube       kubeAccess
	sources    []source
	// missing are the optional APIs the state cannot read, and why (apis.go).
	missing map[string]string
	// noCRD: a missing API's CRD is not installed (rather than RBAC).
	noCRD  map[string]bool
	synced atomic.Bool
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
		settings:         settings,
		clock:            clk,
		pods:             map[types.UID]*podEntry{},
		gangs:            map[gang.Key]*gangEntry{},
		queues:           map[string]*queueEntry{},
		nodes:            map[string]*nodeEntry{},
		namespaces:       map[string]map[string]string{},
		inNamespace:      map[string]map[types.UID]*podEntry{},
		podsOn:           map[string]map[types.UID]*podEntry{},
		podsByController: map[types.UID]map[types.UID]*podEntry{},
		foreign:          map[types.UID]gang.Key{},
		cardResources:    map[corev1.ResourceName]bool{},
		capacity:         quota.Resources{},
		cardCapacity:     map[string]int64{},
		nodesByCard:      map[corev1.ResourceName]map[string]map[string]struct{}{},
		carriers:         map[corev1.ResourceName]int{},
		modelLists:       map[cardKey][]string{},
		assembling:       sets.New[gang.Key](),
		awaitingMin:      sets.New[gang.Key](),
		belowMin:         sets.New[gang.Key](),
		parkedGangs:      map[gang.Key]map[types.UID]*corev1.Pod{},
		parkedElastic:    map[types.UID]*corev1.Pod{},
		deferred:         map[types.UID]*corev1.Pod{},
		unverified:       map[types.UID]*podEntry{},
		waitingRoom:      map[string]map[types.UID]*corev1.Pod{},
		waitingModels:    map[types.UID]*corev1.Pod{},
		waitingOwner:     map[string]map[types.UID]*corev1.Pod{},
		reported:         map[string]string{},
		missing:          map[string]string{},
		noCRD:            map[string]bool{},
		renamedModels:    map[string]string{},
		preemptions:      map[string]*preemption{},
		victimOf:         map[types.UID]string{},
		claimOf:          map[types.UID]string{},
		unnominated:      map[types.UID]struct{}{},
		changed:          make(chan struct{}, 1),
		gangNotes:        make(chan struct{}, 1),
		notedGangs:       map[gang.Key]struct{}{},
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
	s.permitPlugin = name
}

// Settings returns the settings.
func (s *State) Settings() Settings {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.settings
}

// Changed is signalled whenever a queue's numbers may have changed; the
// status writer waits on it.
func (s *State) Changed() <-chan struct{} { return s.changed }

func (s *State) notifyLocked() {
	s.deserved.dirty = true
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Synced tells whether every informer feeding the state has delivered its
// initial list, so no decision is made on counts still being rebuilt after
// a start (SPEC §3.1 "across restarts"). Once true it stays true. Attach
// registers the informers before the scheduler starts any, so it is never
// true too early; a state fed by hand has none and is synced at once.
func (s *State) Synced() bool {
	if s.synced.Load() {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.synced.Load() {
		return true
	}
	for _, src := range s.sources {
		if !src.synced() && (src.api == "" || s.missing[src.api] == "") {
			return false
		}
	}
	// Placements read before now are judged before anything sees the
	// state synced.
	s.verifyPlacementsLocked()
	s.synced.Store(true)
	return true
}

// WaitForSync waits until Synced, or until ctx ends.
func (s *State) WaitForSync(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return s.Synced(), nil
	})
}
