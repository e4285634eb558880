package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/test/builder"
)

// gangLedger follows each gang's bound pods from a pod watch: when its
// min was first all bound, and since when it has had some but fewer than
// min bound.
type gangLedger struct {
	mu      sync.Mutex
	min     map[string]int
	bound   map[string]map[string]bool
	partial map[string]time.Time // gang -> first bind while below min
	whole   map[string]time.Time
	onWhole func(gang string)
}

func (l *gangLedger) add(gang string, min int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.min[gang], l.bound[gang] = min, map[string]bool{}
}

func (l *gangLedger) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	g := p.Labels[schedv1alpha1.PodGroupLabel]
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.bound[g]
	if !ok || b[p.Name] {
		return
	}
	b[p.Name] = true
	if _, done := l.whole[g]; done {
		return
	}
	if len(b) < l.min[g] {
		if _, seen := l.partial[g]; !seen {
			l.partial[g] = time.Now()
		}
		return
	}
	delete(l.partial, g)
	l.whole[g] = time.Now()
	go l.onWhole(g)
}

// stuckPartial names a gang that has been bound below its min for longer
// than binding a whole gang takes.
func (l *gangLedger) stuckPartial(grace time.Duration) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for g, since := range l.partial {
		if time.Since(since) > grace {
			return fmt.Sprintf("gang %s has %d of min %d pods bound since %s", g, len(l.bound[g]), l.min[g], since.Format(time.RFC3339Nano))
		}
	}
	return ""
}

func (l *gangLedger) wholeSince(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.whole {
		if at.After(t) {
			n++
		}
	}
	return n
}

// TestInterleavedGangsMakeSteadyProgress: for two minutes, gangs of 2 to 6
// pods of 1 or 2 GPUs arrive in a random (seeded) order on 24 GPUs, asking
// for about twice what is free; a gang whose min is bound runs a few
// seconds, then completes. A gang whose pods ask for more GPUs than any
// node has waits among them. Throughout, no gang is ever bound below its
// min for longer than binding takes (SPEC §2.1); every 30 seconds some gang
// starts (no deadlock, SPEC §2.3); once arrivals stop and capacity frees,
// every gang that fits runs, and the one that never fits binds nothing.
func TestInterleavedGangsMakeSteadyProgress(t *testing.T) {
	const (
		seed     = 7
		duration = 2 * time.Minute
		arrivals = 90 * time.Second
		// bindGrace bounds how long a gang's min takes to bind once its
		// first pod is bound: they bind together after Permit.
		bindGrace = 3 * time.Second
		// A gang arrives every second and runs runFor once whole: about
		// 6 GPUs a second asked of 24 GPUs that serve under 5 a second.
		every  = time.Second
		runFor = 5 * time.Second
	)
	ns := createGPUNamespace(t, "interleaved")
	createNodes(t, gpuNodes("il", 6, 4)...)
	startScheduler(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	completeGang := func(g string) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(runFor):
		}
		_ = env.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)},
			metav1.ListOptions{LabelSelector: schedv1alpha1.PodGroupLabel + "=" + g})
	}
	ledger := &gangLedger{min: map[string]int{}, bound: map[string]map[string]bool{}, partial: map[string]time.Time{}, whole: map[string]time.Time{}, onWhole: completeGang}
	factory := informers.NewSharedInformerFactoryWithOptions(env.kube, 0, informers.WithNamespace(ns))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ledger.observe,
		UpdateFunc: func(_, obj any) { ledger.observe(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())

	// The gangs, each with its arrival time; about 2 x 24 GPUs outstanding
	// at any time over the arrival period.
	rng := rand.New(rand.NewPCG(seed, seed))
	type arrival struct {
		name      string
		pods, gpu int
		at        time.Duration
	}
	var gangs []arrival
	for i := 0; ; i++ {
		at := time.Duration(i) * every
		if at >= arrivals {
			break
		}
		gangs = append(gangs, arrival{name: fmt.Sprintf("g%d", i), pods: 2 + rng.IntN(5), gpu: 1 + rng.IntN(2), at: at})
	}
	rng.Shuffle(len(gangs), func(i, j int) { gangs[i].at, gangs[j].at = gangs[j].at, gangs[i].at })
	never := arrival{name: "never", pods: 2, gpu: 5, at: 10 * time.Second}
	gangs = append(gangs, never)

	start := time.Now()
	var creators sync.WaitGroup
	defer creators.Wait()
	defer cancel()
	for _, g := range gangs {
		ledger.add(g.name, g.pods)
		creators.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(g.at))):
			}
			pg := builder.MakePodGroup(ns, g.name, int32(g.pods)).Obj()
			if _, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("creating PodGroup %s: %v", g.name, err)
				return
			}
			for _, p := range gangPods(ns, g.name, g.pods, g.gpu) {
				if _, err := env.kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("creating pod %s: %v", p.Name, err)
					return
				}
			}
		})
	}

	// Throughout: no gang stays partly bound; some gang starts every 30 s.
	lastProgress := start
	for time.Since(start) < duration {
		time.Sleep(poll)
		if msg := ledger.stuckPartial(bindGrace); msg != "" {
			t.Fatalf("partial gang after %s: %s", time.Since(start).Round(time.Second), msg)
		}
		if ledger.wholeSince(lastProgress) > 0 {
			lastProgress = time.Now()
		}
		if time.Since(lastProgress) > 30*time.Second {
			t.Fatalf("no gang started between %s and %s: %v", lastProgress.Sub(start).Round(time.Second), time.Since(start).Round(time.Second), boundPerGang(t, ns))
		}
	}

	// Once arrivals have stopped, every gang that fits runs in turn.
	deadline := time.Now().Add(2 * waitTimeout)
	for {
		ledger.mu.Lock()
		var waiting []string
		for _, g := range gangs {
			if _, ran := ledger.whole[g.name]; !ran && g.name != never.name {
				waiting = append(waiting, g.name)
			}
		}
		ledger.mu.Unlock()
		if len(waiting) == 0 {
			break
		}
		if msg := ledger.stuckPartial(bindGrace); msg != "" {
			t.Fatalf("partial gang while draining: %s", msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("gangs that fit never ran once capacity freed: %v; bound now %v", waiting, boundPerGang(t, ns))
		}
		time.Sleep(poll)
	}
	if n := boundPerGang(t, ns)[never.name]; n != 0 {
		t.Errorf("gang %s, whose pods fit no node, has %d pods bound", never.name, n)
	}
	t.Logf("%d gangs ran whole in %s", ledger.wholeSince(start), time.Since(start).Round(time.Second))
}
