package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/test/builder"
)

// The reclaim storm: queue A (q-0) holds every card of the cluster before
// the scheduler starts, all of it borrowed: on even nodes 8 single pods, on
// odd nodes an elastic gang of 8 with min 4, every pod preemptible. Once
// the scheduler is ready, queue B (q-1), of the same weight and no
// guarantee, asks for as many cards as the cluster has: half in single
// pods, half in gangs of 8 (min 8); and A asks for a quarter more. Each
// queue deserves half the cards. B must come to hold its half by reclaim,
// evicting no more of A than that needs, A must not take any of it back,
// and no gang may be left running below its min.
const (
	stormGangSize, stormGangMin = 8, 4
	// stormQuiet is how long nothing must be bound or evicted, once B
	// holds its share, for the storm to have settled.
	stormQuiet = 10 * time.Second
	// stormWaitingLabel marks A's pods that arrive with the storm.
	stormWaitingLabel = "bench.cardinal.dev/waiting"
)

// reclaimResult is what the reclaim storm measured.
type reclaimResult struct {
	// Cards in the cluster; B's share of them (Queue status, at the end).
	Cards, Share int
	// ToShare is from B's first pod created to B holding its share; zero
	// if it never did.
	ToShare time.Duration
	// Settled is from B's first pod to the last bind or eviction.
	Settled time.Duration
	// Reclaimed are A's pods evicted for B, and Beyond how many of them
	// B's share did not need; WithinA are A's pods evicted for A's own
	// waiting pods (a gang's min before elastic pods, SPEC §5.4).
	Reclaimed, Beyond, WithinA int
	// BackAndForth counts capacity taken back: B's pods evicted, and A's
	// waiting pods placed beyond the room A's own evictions made.
	BackAndForth int
	// HeldA and HeldB are the cards each queue's bound pods held at the end.
	HeldA, HeldB int
	// PartialGangs are gangs of either queue running below min at the end.
	PartialGangs int
}

// stormPod is the queue and gang of a bound pod the storm follows.
type stormPod struct {
	queue, gang string
	waiting     bool
}

// storm follows the pods of the reclaim storm as they are bound and deleted.
type storm struct {
	mu      sync.Mutex
	started time.Time // B's first pod created
	share   int
	bound   map[types.UID]stormPod
	held    map[string]int // queue -> cards of bound pods
	gangs   map[string]int // gang -> bound pods
	min     map[string]int
	atShare time.Time
	last    time.Time
	// reclaimed and withinA count A's pods evicted for B and for A;
	// evictedB B's pods evicted; placedA A's waiting pods placed.
	reclaimed, withinA, evictedB, placedA int
}

func newStorm(w workload) *storm {
	s := &storm{bound: map[types.UID]stormPod{}, held: map[string]int{}, gangs: map[string]int{}, min: map[string]int{}}
	for i := range w.Nodes {
		if i%2 == 1 {
			s.min[fmt.Sprintf("a-%d", i)] = stormGangMin
		}
	}
	for g := range w.Nodes * w.GPUs / 2 / stormGangSize {
		s.min[fmt.Sprintf("b-%d", g)] = stormGangSize
	}
	return s
}

func (s *storm) handler() cache.ResourceEventHandler {
	bind := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, seen := s.bound[p.UID]; seen {
			return
		}
		sp := stormPod{queue: p.Labels[v1alpha1.QueueLabel], gang: p.Labels[schedv1alpha1.PodGroupLabel], waiting: p.Labels[stormWaitingLabel] != ""}
		s.bound[p.UID] = sp
		s.held[sp.queue]++
		s.gangs[sp.gang]++
		if s.started.IsZero() {
			return // bound before the storm
		}
		s.last = time.Now()
		if sp.waiting {
			s.placedA++
		}
		if s.atShare.IsZero() && s.held[queueName(1)] >= s.share {
			s.atShare = s.last
		}
	}
	gone := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		sp, ok := s.bound[p.UID]
		if !ok {
			return
		}
		delete(s.bound, p.UID)
		s.held[sp.queue]--
		s.gangs[sp.gang]--
		s.last = time.Now()
		switch {
		case sp.queue != queueName(0):
			s.evictedB++
		case reclaimed(p):
			s.reclaimed++
		default:
			s.withinA++
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    bind,
		UpdateFunc: func(_, obj any) { bind(obj) },
		DeleteFunc: gone,
	}
}

func (s *storm) start(share int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started, s.share = time.Now(), share
}

// settled tells whether B holds its share and nothing has moved for stormQuiet.
func (s *storm) settled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.atShare.IsZero() && time.Since(s.last) > stormQuiet
}

func (s *storm) result(cards int) *reclaimResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &reclaimResult{Cards: cards, Share: s.share, Reclaimed: s.reclaimed, WithinA: s.withinA,
		BackAndForth: s.evictedB + max(0, s.placedA-s.withinA), HeldA: s.held[queueName(0)], HeldB: s.held[queueName(1)]}
	if !s.atShare.IsZero() {
		r.ToShare = s.atShare.Sub(s.started)
	}
	if s.last.After(s.started) {
		r.Settled = s.last.Sub(s.started)
	}
	// A held every card; it deserves cards - share of them.
	r.Beyond = max(0, s.reclaimed-s.share)
	for g, n := range s.gangs {
		if g != "" && n > 0 && n < s.min[g] {
			r.PartialGangs++
		}
	}
	return r
}

// reclaimed tells whether a pod was evicted for another queue: its
// DisruptionTarget condition says so (SPEC §5.7).
func reclaimed(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && strings.HasPrefix(c.Message, "reclaimed by ") {
			return true
		}
	}
	return false
}

// stormPodOf is a one-card pod of the storm, preemptible by priority (0,
// below preemptibleBelowPriority).
func stormPodOf(name, queue, gang string) *builder.PodWrapper {
	p := builder.MakePod(benchNamespace, name).Req(corev1.ResourceCPU, "100m").Req(corev1.ResourceMemory, "256Mi").
		GPU(1).Label(v1alpha1.QueueLabel, queue)
	if gang != "" {
		p.Label(schedv1alpha1.PodGroupLabel, gang)
	}
	if queue == queueName(0) {
		p.Label(fillerLabel, "true") // not B's: the bind log leaves it out
	}
	return p
}

// createHolders binds A's pods to every card before the scheduler starts.
func createHolders(ctx context.Context, kube kubernetes.Interface, pgs pgclient.Interface, w workload) error {
	var jobs []func() error
	for i := range w.Nodes {
		gang := ""
		if i%2 == 1 {
			gang = fmt.Sprintf("a-%d", i)
			pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: gang},
				Spec: schedv1alpha1.PodGroupSpec{MinMember: stormGangMin}}
			jobs = append(jobs, func() error {
				_, err := pgs.SchedulingV1alpha1().PodGroups(benchNamespace).Create(ctx, pg, metav1.CreateOptions{})
				return err
			})
		}
		for j := range w.GPUs {
			p := stormPodOf(fmt.Sprintf("a-%d-%d", i, j), queueName(0), gang).Obj()
			p.Spec.NodeName = fmt.Sprintf("node-%d", i)
			jobs = append(jobs, func() error {
				_, err := kube.CoreV1().Pods(benchNamespace).Create(ctx, p, metav1.CreateOptions{})
				return err
			})
		}
	}
	return parallel(jobs)
}

// stormPods are what arrive with the storm: B's single pods and gangs, and
// A's waiting pods, interleaved so that both queues ask at once.
func (w workload) stormPods() (pods []*corev1.Pod, groups []*schedv1alpha1.PodGroup) {
	cards := w.Nodes * w.GPUs
	b := queueName(1)
	for g := range cards / 2 / stormGangSize {
		name := fmt.Sprintf("b-%d", g)
		groups = append(groups, &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: name},
			Spec: schedv1alpha1.PodGroupSpec{MinMember: stormGangSize}})
	}
	singles, waiting := cards/2, cards/4
	for i := range max(singles, len(groups)) {
		if i < singles {
			pods = append(pods, stormPodOf(fmt.Sprintf("b-single-%d", i), b, "").Obj())
		}
		if i < len(groups) {
			for j := range stormGangSize {
				pods = append(pods, stormPodOf(fmt.Sprintf("b-%d-%d", i, j), b, groups[i].Name).Obj())
			}
		}
		if i < waiting {
			pods = append(pods, stormPodOf(fmt.Sprintf("a-waiting-%d", i), queueName(0), "").Label(stormWaitingLabel, "true").Obj())
		}
	}
	return pods, groups
}

// runStorm lets the storm arrive and waits until it settles or timeout
// passes.
func runStorm(ctx context.Context, cp *controlplane.ControlPlane, w workload, s *storm, timeout time.Duration) (*reclaimResult, error) {
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(cfg)
	pgs := pgclient.NewForConfigOrDie(cfg)
	cards := w.Nodes * w.GPUs
	pods, groups := w.stormPods()
	var jobs []func() error
	for _, pg := range groups {
		jobs = append(jobs, func() error {
			_, err := pgs.SchedulingV1alpha1().PodGroups(benchNamespace).Create(ctx, pg, metav1.CreateOptions{})
			return err
		})
	}
	if err := parallel(jobs); err != nil {
		return nil, err
	}
	s.start(cards / 2)
	jobs = jobs[:0]
	for _, p := range pods {
		jobs = append(jobs, func() error {
			_, err := kube.CoreV1().Pods(benchNamespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	if err := parallel(jobs); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for !s.settled() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	r := s.result(cards)
	// The share the scheduler decided with, as Queue status shows it.
	q, err := cardinalclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().Queues().Get(ctx, queueName(1), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range q.Status.Cards {
		if c.Name == w.Models[0] && int(c.Deserved) != r.Share {
			return r, fmt.Errorf("queue %s deserves %d %s cards by its status, the storm expects %d", q.Name, c.Deserved, c.Name, r.Share)
		}
	}
	return r, nil
}
