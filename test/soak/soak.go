// Package soak runs Cardinal through seeded random runs on a real control
// plane: queues, nodes of several card models, gangs, single pods and
// Deployments come and go, nodes are removed and re-sliced, schedulers are
// killed and restarted, a second replica takes over from a killed leader,
// and a proxy between the schedulers and kube-apiserver delays and fails
// their writes. After every step it checks, from the API alone, what SPEC.md
// promises: no queue above its capability, no gang left bound below its
// min, no eviction of what may not be evicted, no pod bound twice; once
// quiet, that the scheduler's numbers equal a recount from the API; and
// that a pod that fits still binds.
//
// A seed fixes the run's objects, steps and fault rates; the interleaving
// of the scheduler with them is the machine's. `go run ./cmd/soak --seed N`
// replays one.
package soak

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/pkg/controlplane"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
)

// Timings of a run. The scheduler runs with a short Permit wait and lease,
// so that gangs give up and replicas take over within a step or two.
const (
	permitWait    = 10 * time.Second
	leaseDuration = 6 * time.Second
	// partialGrace bounds how long a gang may stay bound below min after
	// its Permit wait (permitWait, or its PodGroup's
	// scheduleTimeoutSeconds): room for a failed bind's retry after the
	// gang's backoff, and for evictions to land.
	partialGrace = 30 * time.Second
	// fitsWithin bounds how long a pod that fits may take to bind.
	fitsWithin = 45 * time.Second
	// quietWithin bounds how long the scheduler's numbers may take to
	// equal a recount from the API once nothing changes.
	quietWithin = 45 * time.Second
	// raceSlowdown stretches these bounds for a scheduler built with
	// -race, which runs several times slower.
	raceSlowdown = 2
)

// Options configure runs.
type Options struct {
	ControlPlane *controlplane.ControlPlane
	// ConfigPath is config/scheduler-config.yaml.
	ConfigPath string
	// Steps per seed.
	Steps int
	// Log, if set, gets a line per step.
	Log io.Writer
	// RaceBinary, if set, is a cardinal-scheduler built with -race, which
	// runs the seeds that RaceEvery divides: a data race it reports is a
	// violation.
	RaceBinary string
	RaceEvery  uint64
	// RestartAPIServer lets steps restart kube-apiserver. Off, those steps
	// do nothing.
	RestartAPIServer bool
}

// Result is what one seed's run did and found.
type Result struct {
	Seed      uint64
	Steps     int
	Checks    int
	Restarts  int
	Failovers int
	// APIRestarts counts kube-apiserver restarts; Relabels and MinChanges
	// the running workloads relabelled and gangs' minMember changed.
	APIRestarts int
	Relabels    int
	MinChanges  int
	// Race: the run's schedulers were built with -race.
	Race       bool
	Faults     map[string]map[string]int
	Violations []string
	Took       time.Duration
}

type clients struct {
	kube     kubernetes.Interface
	cardinal cardinalclient.Interface
	groups   pgclient.Interface
}

// Run runs one seed.
func Run(ctx context.Context, opts Options, seed uint64) (*Result, error) {
	start := time.Now()
	cfg := opts.ControlPlane.Config()
	c := clients{kube: kubernetes.NewForConfigOrDie(cfg), cardinal: cardinalclient.NewForConfigOrDie(cfg), groups: pgclient.NewForConfigOrDie(cfg)}
	w := &world{seed: seed, rng: rand.New(rand.NewPCG(seed, 0xca4d)), run: fmt.Sprintf("soak-%d", seed),
		nodes: map[string]*node{}, work: map[string]*workload{}}
	r := &runner{opts: opts, c: c, w: w, res: &Result{Seed: seed}, binary: filepath.Join(opts.ControlPlane.BinDir, "cardinal-scheduler")}
	r.slowdown = 1
	if opts.RaceBinary != "" && opts.RaceEvery > 0 && seed%opts.RaceEvery == 0 {
		r.binary, r.res.Race, r.slowdown = opts.RaceBinary, true, raceSlowdown
	}
	r.log("seed %d", seed)
	defer r.cleanup()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	for i := range opts.Steps {
		if err := r.step(ctx, i); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		r.res.Steps++
		sleepFor(ctx, time.Duration(200+w.pick(600))*time.Millisecond)
		if err := r.checkNow(ctx); err != nil {
			return nil, err
		}
	}
	if err := r.finish(ctx); err != nil {
		return nil, err
	}
	r.checkLogs()
	r.res.Faults = r.proxy.Counts()
	r.res.Took = time.Since(start)
	return r.res, nil
}

type runner struct {
	opts   Options
	c      clients
	w      *world
	res    *Result
	proxy  *Proxy
	config string
	binary string
	// slowdown stretches the time bounds (1, or raceSlowdown).
	slowdown time.Duration
	scheds   []*controlplane.Scheduler
	// started are every scheduler the run started, for their logs.
	started []*controlplane.Scheduler
	checker *checker
	stop    context.CancelFunc
}

func (r *runner) log(format string, args ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, format+"\n", args...)
	}
}

func (r *runner) violate(msgs ...string) {
	for _, m := range msgs {
		r.log("VIOLATION: %s", m)
		r.res.Violations = append(r.res.Violations, m)
	}
}

// lostLease tells whether a scheduler's log says it ended because it lost
// its lease: "leaderelection lost" up to 1.36, "Leaderelection lost" in 1.37.
func lostLease(log string) bool {
	return strings.Contains(strings.ToLower(log), "leaderelection lost")
}

// step makes one random change.
func (r *runner) step(ctx context.Context, i int) error {
	w := r.w
	for range r.reapExited() {
		if err := r.startScheduler(); err != nil {
			return err
		}
	}
	// Every step draws the same numbers whatever the API shows, so a seed
	// keeps its steps when placements differ.
	roll, choice, aux := w.pick(100), w.pick(1<<20), w.pick(1<<20)
	switch {
	case roll < 22:
		return r.createGang(ctx, i, false)
	case roll < 28:
		return r.createGang(ctx, i, true)
	case roll < 35:
		wl, _, pods := w.newGang(true, false)
		r.log("  %d: pod %s/%s, %d %s (sidecar %v), %s, %s, grace %ds", i, wl.ns, wl.name, wl.cards, wl.res, wl.sidecar, wl.priority, wl.preempt, wl.grace)
		w.changed()
		return r.createPods(ctx, pods)
	case roll < 41:
		wl, d := w.newDeployment()
		r.log("  %d: Deployment %s/%s of %d, %s, %s", i, wl.ns, wl.name, wl.replicas, wl.priority, wl.preempt)
		w.changed()
		_, err := r.c.kube.AppsV1().Deployments(wl.ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	case roll < 45:
		return r.scale(ctx, i, choice)
	case roll < 53:
		ws := w.liveWork("")
		if len(ws) == 0 {
			return nil
		}
		wl := ws[choice%len(ws)]
		r.log("  %d: delete %s %s/%s", i, wl.kind, wl.ns, wl.name)
		w.changed()
		return r.deleteWork(ctx, wl)
	case roll < 57:
		w.changed()
		return r.deletePending(ctx, i, choice)
	case roll < 61:
		w.changed()
		return r.removeNode(ctx, i, choice)
	case roll < 65:
		r.log("  %d: add a node", i)
		w.changed()
		return r.addNode(ctx)
	case roll < 68:
		w.changed()
		return r.reslice(ctx, i, choice)
	case roll < 73:
		s := r.scheds[choice%len(r.scheds)]
		r.log("  %d: kill -9 a scheduler, start another", i)
		s.Kill()
		r.scheds = without(r.scheds, s)
		r.res.Restarts++
		return r.startScheduler()
	case roll < 77:
		if len(r.scheds) < 2 {
			return nil
		}
		leader := r.leader(ctx)
		if leader == nil {
			return nil
		}
		r.log("  %d: kill -9 the leader, start another replica", i)
		leader.Kill()
		r.scheds = without(r.scheds, leader)
		r.res.Failovers++
		return r.startScheduler()
	case roll < 83:
		return r.relabel(ctx, i, choice, aux)
	case roll < 87:
		return r.changeMin(ctx, i, choice, aux)
	case roll < 88:
		return r.restartAPIServer(ctx, i)
	default:
		w.faults = []float64{0, 0.05, 0.15, 0.3}[choice%4]
		r.log("  %d: faults on %.0f%% of writes, %.0f%% of reads and watches", i, w.faults*100, w.faults*50)
		r.proxy.SetRate(w.faults)
	}
	return nil
}

// createGang makes a gang, of a queue's namespace or of a tenant's.
func (r *runner) createGang(ctx context.Context, i int, ofTenant bool) error {
	wl, pg, pods := r.w.newGang(false, ofTenant)
	r.log("  %d: gang %s/%s of queue %s (denied %v), min %d of %d, %d %s each (sidecar %v), %s, %s, grace %ds",
		i, wl.ns, wl.name, wl.queue, wl.denied, wl.min, len(pods), wl.cards, wl.res, wl.sidecar, wl.priority, wl.preempt, wl.grace)
	r.w.changed()
	if _, err := r.c.groups.SchedulingV1alpha1().PodGroups(wl.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		return err
	}
	return r.createPods(ctx, pods)
}

// scale scales a Deployment to 0..3.
func (r *runner) scale(ctx context.Context, i, choice int) error {
	ds := r.w.liveWork("deployment")
	if len(ds) == 0 {
		return nil
	}
	wl := ds[choice%len(ds)]
	wl.replicas = int32(choice % 4)
	r.log("  %d: Deployment %s/%s scaled to %d", i, wl.ns, wl.name, wl.replicas)
	r.w.changed()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := r.c.kube.AppsV1().Deployments(wl.ns).Get(ctx, wl.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(wl.replicas)
		_, err = r.c.kube.AppsV1().Deployments(wl.ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

func (r *runner) createPods(ctx context.Context, pods []*corev1.Pod) error {
	for _, p := range pods {
		if _, err := r.c.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// deleteWork deletes a workload whole, as a job's operator does; its
// pods end after their grace period.
func (r *runner) deleteWork(ctx context.Context, wl *workload) error {
	return r.deleteWorkWith(ctx, wl, metav1.DeleteOptions{})
}

// deleteWorkWith deletes a workload whole with opts for its pods: at once
// (grace 0) for pods on a node that is gone, as the pod garbage collector
// deletes them, with no kubelet to wait for.
func (r *runner) deleteWorkWith(ctx context.Context, wl *workload, opts metav1.DeleteOptions) error {
	wl.deleted = true
	var err error
	switch wl.kind {
	case "deployment":
		// No garbage collector runs here: the ReplicaSets and pods go too.
		// A deployment controller that had not yet seen the Deployment go
		// may make a ReplicaSet after: each call deletes what it finds.
		// Its pods first, so that they terminate classed by their owner.
		sel := metav1.ListOptions{LabelSelector: "app=" + wl.name}
		err = r.c.kube.CoreV1().Pods(wl.ns).DeleteCollection(ctx, opts, sel)
		if err == nil {
			err = ignoreNotFound(r.c.kube.AppsV1().Deployments(wl.ns).Delete(ctx, wl.name, metav1.DeleteOptions{}))
		}
		if err == nil {
			err = r.c.kube.AppsV1().ReplicaSets(wl.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		}
		if err == nil {
			err = r.c.kube.CoreV1().Pods(wl.ns).DeleteCollection(ctx, opts, sel)
		}
	default:
		// The pods first: a gang's PodGroup gone while they terminate
		// would leave them classed by their own labels alone.
		for _, name := range wl.pods {
			if e := ignoreNotFound(r.c.kube.CoreV1().Pods(wl.ns).Delete(ctx, name, opts)); e != nil && err == nil {
				err = e
			}
		}
		if wl.kind == "gang" && err == nil {
			err = r.c.groups.SchedulingV1alpha1().PodGroups(wl.ns).Delete(ctx, wl.name, metav1.DeleteOptions{})
		}
	}
	return ignoreNotFound(err)
}

// deletePending deletes some of a gang's pods that are not bound, as a
// job scaled in does, keeping at least min pods: a gang partly bound (a
// bind failed and waits to retry) is left alone.
func (r *runner) deletePending(ctx context.Context, i, choice int) error {
	gangs := r.w.liveWork("gang")
	if len(gangs) == 0 {
		return nil
	}
	wl := gangs[choice%len(gangs)]
	pods, bound, err := r.podsOf(ctx, wl)
	if err != nil {
		return err
	}
	if bound > 0 && bound < wl.min {
		return nil
	}
	left, n := len(pods), 0
	for _, p := range pods {
		if p.Spec.NodeName != "" || left <= wl.min {
			continue
		}
		// Only if still unbound: a bind that landed since wins.
		pre := metav1.Preconditions{ResourceVersion: &p.ResourceVersion}
		if r.c.kube.CoreV1().Pods(wl.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &pre}) == nil {
			left--
			n++
		}
	}
	r.log("  %d: delete %d pending pods of gang %s/%s", i, n, wl.ns, wl.name)
	return nil
}

// podsOf lists a gang's or single pod's pods that exist, and how many of
// them are bound.
func (r *runner) podsOf(ctx context.Context, wl *workload) (pods []corev1.Pod, bound int, err error) {
	for _, name := range wl.pods {
		p, err := r.c.kube.CoreV1().Pods(wl.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ignoreNotFound(err) == nil {
				continue
			}
			return nil, 0, err
		}
		if p.Spec.NodeName != "" {
			bound++
		}
		pods = append(pods, *p)
	}
	return pods, bound, nil
}

// leader is the replica that leads: the one serving Cardinal's metrics.
func (r *runner) leader(ctx context.Context) *controlplane.Scheduler {
	for _, s := range r.scheds {
		if body, err := s.Get(ctx, "/metrics"); err == nil && strings.Contains(string(body), "cardinal_gangs{") {
			return s
		}
	}
	return nil
}

func sleepFor(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// crashOf is what a scheduler's log says of how it ended, for a violation
// that outlives the log: from a panic or fatal error on (its first lines
// of stack), else the log's last lines.
func crashOf(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	from := max(len(lines)-20, 0)
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			from = i
			break
		}
	}
	end := min(from+60, len(lines))
	return "\n" + strings.Join(lines[from:end], "\n")
}
