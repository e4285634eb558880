package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// The interleaved workload: gangs arrive while the scheduler runs, in a
// random (seeded) order and spread over arrivalWindow, asking in all for
// twice the cluster's GPUs; a gang whose min is bound runs for runFor and
// then completes (its pods are deleted), freeing room for those waiting.
// A few gangs ask for more GPUs per pod than any node has and can never
// run: they must wait whole without holding anyone back.
const (
	interleavedSeed = 20261123
	arrivalWindow   = 30 * time.Second
	runFor          = 10 * time.Second
	// neverFitEvery is how often (one gang in so many) a gang cannot fit.
	neverFitEvery = 20
)

// arrivingGang is one gang of the interleaved workload.
type arrivingGang struct {
	Name      string
	Pods, GPU int
	At        time.Duration
	// Fits is false for gangs whose pods ask for more GPUs than a node has.
	Fits bool
}

// arrivingGangs draws the workload's gangs: sizes 2 to 16 pods of 1 or 2
// GPUs, until the gangs that fit ask for twice the cluster's GPUs.
func (w workload) arrivingGangs() []arrivingGang {
	rng := rand.New(rand.NewPCG(interleavedSeed, interleavedSeed))
	sizes := []int{2, 4, 8, 16}
	var out []arrivingGang
	for asked := 0; asked < 2*w.Nodes*w.GPUs; {
		g := arrivingGang{Name: fmt.Sprintf("gang-%d", len(out)), Pods: sizes[rng.IntN(len(sizes))], GPU: 1 + rng.IntN(2), Fits: true,
			At: time.Duration(rng.Int64N(int64(arrivalWindow)))}
		if len(out)%neverFitEvery == neverFitEvery-1 {
			g.Pods, g.GPU, g.Fits = 2, w.GPUs+1, false
		} else {
			asked += g.Pods * g.GPU
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// interleavedResult is what the interleaved workload measured.
type interleavedResult struct {
	Gangs, Fit, Ran int
	// PerMinute is whole gangs run per minute, from the scheduler being
	// ready to the last gang that fits having its min bound.
	PerMinute float64
	// Stuck are gangs that fit but never ran; Partial gangs had some but
	// fewer than min pods bound at a check, a second after their first bind.
	Stuck, Partial int
	// WaitP50 and WaitP99 are arrival to min bound, ms.
	WaitP50, WaitP99 float64
}

// gangRuns follows the interleaved gangs' pods: when each gang arrived,
// when its min was bound, and its pods bound now.
type gangRuns struct {
	mu      sync.Mutex
	size    map[string]int
	arrived map[string]time.Time
	whole   map[string]time.Time
	bound   map[string]map[string]bool // gang -> bound pod names
	first   map[string]time.Time       // gang -> first bind of the current attempt
	partial map[string]bool
	onWhole func(gang string)
}

func newGangRuns(gangs []arrivingGang, onWhole func(string)) *gangRuns {
	r := &gangRuns{size: map[string]int{}, arrived: map[string]time.Time{}, whole: map[string]time.Time{},
		bound: map[string]map[string]bool{}, first: map[string]time.Time{}, partial: map[string]bool{}, onWhole: onWhole}
	for _, g := range gangs {
		r.size[g.Name], r.bound[g.Name] = g.Pods, map[string]bool{}
	}
	return r
}

func (r *gangRuns) handler() cache.ResourceEventHandler {
	observe := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		g := p.Labels[schedv1alpha1.PodGroupLabel]
		r.mu.Lock()
		defer r.mu.Unlock()
		b, ok := r.bound[g]
		if !ok || b[p.Name] {
			return
		}
		if len(b) == 0 {
			r.first[g] = time.Now()
		}
		b[p.Name] = true
		if _, done := r.whole[g]; !done && len(b) >= r.size[g] {
			r.whole[g] = time.Now()
			go r.onWhole(g)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }}
}

// checkPartial records gangs that have had some but fewer than min pods
// bound for over a second: all-or-nothing binding completes in less.
func (r *gangRuns) checkPartial() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for g, b := range r.bound {
		if _, done := r.whole[g]; !done && len(b) > 0 && time.Since(r.first[g]) > time.Second {
			r.partial[g] = true
		}
	}
}

func (r *gangRuns) arrive(g string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrived[g] = time.Now()
}

// runInterleaved creates the gangs at their arrival times, completes each
// gang runFor after its min is bound, and waits until every gang that fits
// has run or timeout passes; gangs that fit but have not run by then are
// stuck.
func runInterleaved(ctx context.Context, cp *controlplane.ControlPlane, w workload, pods cache.SharedIndexInformer, ready time.Time, timeout time.Duration) (*interleavedResult, error) {
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(cfg)
	pgs := pgclient.NewForConfigOrDie(cfg)
	gangs := w.arrivingGangs()
	byName := map[string]arrivingGang{}
	fit := 0
	for _, g := range gangs {
		byName[g.Name] = g
		if g.Fits {
			fit++
		}
	}
	// Completions still pending when the run ends are dropped with ctx.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := newGangRuns(gangs, func(name string) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(runFor):
		}
		complete(ctx, kube, byName[name])
	})
	if _, err := pods.AddEventHandler(runs.handler()); err != nil {
		return nil, err
	}
	errs := make(chan error, 1)
	go func() {
		for _, g := range gangs {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(ready.Add(g.At))):
			}
			runs.arrive(g.Name)
			if err := createGang(ctx, kube, pgs, g); err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
		}
	}()
	deadline := time.After(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case err := <-errs:
			return nil, err
		case <-deadline:
			done = true
		case <-tick.C:
			runs.checkPartial()
			runs.mu.Lock()
			ran := 0
			for g := range runs.whole {
				if byName[g].Fits {
					ran++
				}
			}
			runs.mu.Unlock()
			done = ran == fit
		}
	}
	runs.mu.Lock()
	defer runs.mu.Unlock()
	res := &interleavedResult{Gangs: len(gangs), Fit: fit, Partial: len(runs.partial)}
	var last time.Time
	var waits []float64
	for g, t := range runs.whole {
		res.Ran++
		if t.After(last) {
			last = t
		}
		waits = append(waits, float64(t.Sub(runs.arrived[g]).Milliseconds()))
	}
	res.Stuck = fit - res.Ran
	if res.Stuck > 0 {
		// Gangs that never ran count against the rate: it is over the
		// whole run, not up to the last gang that did run.
		last = time.Now()
	}
	if d := last.Sub(ready); res.Ran > 0 && d > 0 {
		res.PerMinute = float64(res.Ran) / d.Minutes()
	}
	if len(waits) > 0 {
		sort.Float64s(waits)
		res.WaitP50, res.WaitP99 = percentile(waits, 0.5), percentile(waits, 0.99)
	}
	return res, nil
}

// createGang creates a gang's PodGroup and then its pods.
func createGang(ctx context.Context, kube kubernetes.Interface, pgs pgclient.Interface, g arrivingGang) error {
	pg := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: g.Name},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: int32(g.Pods)},
	}
	if _, err := pgs.SchedulingV1alpha1().PodGroups(benchNamespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating PodGroup %s: %w", g.Name, err)
	}
	var jobs []func() error
	for i := range g.Pods {
		p := builder.MakePod(benchNamespace, fmt.Sprintf("%s-%d", g.Name, i)).Req(corev1.ResourceCPU, "100m").Req(corev1.ResourceMemory, "256Mi").
			Label(v1alpha1.QueueLabel, queueName(0)).Label(schedv1alpha1.PodGroupLabel, g.Name).GPU(g.GPU).Obj()
		jobs = append(jobs, func() error {
			_, err := kube.CoreV1().Pods(benchNamespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	return parallel(jobs)
}

// complete ends a gang that ran: its pods go at once (no kubelet would
// confirm a graceful deletion), as a finished job's would.
func complete(ctx context.Context, kube kubernetes.Interface, g arrivingGang) {
	for i := range g.Pods {
		_ = kube.CoreV1().Pods(benchNamespace).Delete(ctx, fmt.Sprintf("%s-%d", g.Name, i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
}
