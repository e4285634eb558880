// Package replay runs a trace (pkg/sim/trace) against one scheduler on a
// fresh local control plane (SPEC §8): the trace's nodes are created as
// simulated GPU nodes, its jobs are submitted as batch/v1 Jobs at their
// submit times divided by the compression K, with their pods (the Jobs are
// managed by the replay, spec.managedBy, which makes each pod at once and
// a new one for each pod evicted, as the Job controller would), and a
// simulated kubelet runs each bound pod for its duration divided by K,
// completes it, honours evictions and counts the work they throw away.
// What happened is recorded (pkg/sim/record).
package replay

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/contenders"
	"cardinal.dev/cardinal/pkg/controlplane"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/sim/record"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

// Options are one replay.
type Options struct {
	Trace     *trace.Trace
	Scheduler contenders.Scheduler
	// Root is the module root: config/ is installed from it.
	Root   string
	BinDir string
	// Compression is K, trace seconds per wall second.
	Compression float64
	// Jobs are the jobs replayed, default Trace.Expanded().
	Jobs []trace.Job
	// SampleEvery is the wall time between samples of the cluster.
	SampleEvery time.Duration
	// Stall ends the run when, after the last arrival, nothing has bound,
	// completed or stopped for this long (wall): what waits then is stuck.
	Stall time.Duration
	// Log receives progress lines.
	Log io.Writer
	// Before, when set, is called with the control plane's admin config
	// after the replay, before the control plane stops: to look at what
	// the scheduler left behind.
	Before func(ctx context.Context, cfg *rest.Config)
}

// Result is what a replay recorded.
type Result struct {
	Timeline []record.Sample
	Jobs     []record.Job
	Moves    []record.Move
	// CreationLags are wall seconds from each job's submit to its first pod.
	CreationLags []float64
	// AttemptP99 is the scheduler's scheduling attempt p99, wall seconds.
	AttemptP99 float64
	// Wall is how long the replay ran, from the first arrival.
	Wall time.Duration
	// WriteErrors are simulated kubelet writes that failed for good.
	WriteErrors int
}

// Run replays opts.Trace against opts.Scheduler.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Jobs == nil {
		opts.Jobs = opts.Trace.Expanded()
	}
	if opts.SampleEvery <= 0 {
		opts.SampleEvery = time.Second
	}
	if opts.Stall <= 0 {
		opts.Stall = 2 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	cat := newCatalog(opts.Trace)
	queues, err := cat.queues(opts.Trace)
	if err != nil {
		return nil, err
	}
	shapes := map[string]podShape{}
	for _, j := range opts.Jobs {
		if shapes[j.Name], err = shapeOf(j, cat); err != nil {
			return nil, err
		}
	}

	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: opts.BinDir, PriorityAndFairness: true})
	if err != nil {
		return nil, err
	}
	defer cp.Stop()
	s := opts.Scheduler
	if err := cp.Install(ctx, filepath.Join(opts.Root, "config")); err != nil {
		return nil, err
	}
	if s.Peer {
		if err := contenders.InstallPeerCRDs(ctx, cp, opts.Root); err != nil {
			return nil, err
		}
	}
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 2000, 2000
	kube := kubernetes.NewForConfigOrDie(cfg)
	c := &cluster{k: opts.Compression, now: time.Now, nodes: map[string]*simNode{}, jobs: map[string]*jobState{},
		pods: map[types.UID]*podState{}, queues: queues, evicted: map[string]eviction{}, catalog: cat,
		kubelet: newKubelet(kube), cfg: cfg}
	c.timers = newTimers(c.fire)
	if err := setUp(ctx, cp, kube, opts, queues, cat, c); err != nil {
		return nil, err
	}

	factory := informers.NewSharedInformerFactory(kube, 0)
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onPod(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { c.onPod(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				c.onDelete(p)
			}
		},
	}); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(runCtx.Done())
	factory.WaitForCacheSync(runCtx.Done())

	// The scheduler's own timers (backoffs, a gang's Permit wait) run as
	// fast as the replayed clock, or each would last K times longer in
	// trace time than it does in a cluster.
	config, err := contenders.CompressTimers(s.Config, opts.Compression)
	if err != nil {
		return nil, err
	}
	sched, err := cp.StartSchedulerBinary(s.Binary, config, s.Peer, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
	if err != nil {
		return nil, err
	}
	defer sched.Stop()
	if err := waitReady(ctx, sched); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Log, "%s: scheduler ready, replaying %d jobs at %gx\n", s.Name, len(opts.Jobs), opts.Compression)

	c.mu.Lock()
	c.start = time.Now()
	c.progress = c.start
	c.mu.Unlock()
	go c.kubelet.run(runCtx)
	go c.timers.run(runCtx)
	res := &Result{}
	arrivals := make(chan error, 1)
	go func() { arrivals <- c.arrive(runCtx, opts, shapes, s.Name) }()
	events := make(chan error, 1)
	go func() { events <- c.playEvents(runCtx, opts.Trace.Events, kube) }()

	last := opts.Jobs[len(opts.Jobs)-1].Submit.Duration
	if n := len(opts.Trace.Events); n > 0 {
		last = max(last, opts.Trace.Events[n-1].At.Duration)
	}
	arrived := false
	tick := time.NewTicker(opts.SampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-arrivals:
			if err != nil {
				return nil, err
			}
			arrived = true
		case err := <-events:
			if err != nil {
				return nil, err
			}
		case <-tick.C:
		}
		if err := sched.Exited(); err != nil {
			return nil, fmt.Errorf("%s exited: %w (log %s)", s.Name, err, sched.LogPath)
		}
		c.mu.Lock()
		now := time.Now()
		res.Timeline = append(res.Timeline, c.sampleLocked(s.Name, c.traceSeconds(now))...)
		c.mu.Unlock()
		done, progress := c.finished()
		traceNow := time.Duration(c.traceSeconds(now) * float64(time.Second))
		if arrived && traceNow >= last && (done || now.Sub(progress) > opts.Stall) {
			res.Wall = now.Sub(c.start)
			break
		}
	}
	cancel()
	if res.AttemptP99, err = attemptP99(ctx, sched); err != nil {
		return nil, err
	}
	if opts.Before != nil {
		opts.Before(ctx, cp.Config())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.collectLocked(res, s.Name)
	return res, nil
}

// setUp creates what exists before the first arrival: namespaces,
// PriorityClasses, the nodes, and each scheduler's own quota objects
// (Cardinal's Queues, scheduler-plugins' ElasticQuotas).
func setUp(ctx context.Context, cp *controlplane.ControlPlane, kube kubernetes.Interface, opts Options, queues []trace.Queue, cat *catalog, c *cluster) error {
	for _, q := range queues {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(q.Name), Labels: map[string]string{v1alpha1.QueueLabel: q.Name}}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	priorities := map[int32]bool{}
	for _, j := range opts.Jobs {
		priorities[j.Priority] = true
	}
	for p := range priorities {
		if _, err := kube.SchedulingV1().PriorityClasses().Create(ctx, priorityClass(p), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, g := range opts.Trace.Nodes {
		if err := c.addNodes(ctx, kube, g); err != nil {
			return err
		}
	}
	switch {
	case opts.Scheduler.Name == contenders.Cardinal:
		cardinal := cardinalclient.NewForConfigOrDie(cp.Config())
		for _, q := range queues {
			obj, err := queueOf(q)
			if err != nil {
				return err
			}
			if _, err := cardinal.SchedulingV1alpha1().Queues().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("queue %s: %w", q.Name, err)
			}
		}
	case opts.Scheduler.Peer:
		a, err := controlplane.NewApplier(cp.Config())
		if err != nil {
			return err
		}
		var objs []*unstructured.Unstructured
		for _, q := range queues {
			objs = append(objs, &unstructured.Unstructured{Object: elasticQuotaOf(q, cat.resource, cat.cardResources)})
		}
		if err := a.Apply(ctx, objs, false); err != nil {
			return err
		}
	}
	return nil
}

// addNodes creates a group's nodes.
func (c *cluster) addNodes(ctx context.Context, kube kubernetes.Interface, g trace.NodeGroup) error {
	for _, n := range nodesOf(g) {
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		c.mu.Lock()
		c.nodes[n.Name] = &simNode{name: n.Name, group: g, detect: cardmodel.Detect(n)}
		c.mu.Unlock()
	}
	return nil
}

// submitters is how many clients create the jobs at once, as many users
// submit at once: a job's objects are made one after another, so a burst
// of gangs needs many clients to be made on time.
const submitters = 16

// arrive submits each job at its time: the Job, and for scheduler-plugins
// its PodGroup first, by submitters clients.
func (c *cluster) arrive(ctx context.Context, opts Options, shapes map[string]podShape, contender string) error {
	kube := c.kubelet.client
	var pgs pgclient.Interface
	if contender == contenders.SchedulerPlugins {
		pgs = pgclient.NewForConfigOrDie(c.cfg)
	}
	jobs := slices.Clone(opts.Jobs)
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit.Duration < jobs[b].Submit.Duration })
	work := make(chan trace.Job)
	errs := make(chan error, submitters)
	for range submitters {
		go func() {
			var first error
			for j := range work {
				if err := c.submit(ctx, kube, pgs, j, shapes[j.Name], contender); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for _, j := range jobs {
		at := c.start.Add(time.Duration(float64(j.Submit.Duration) / c.k))
		if d := time.Until(at); d > 0 {
			select {
			case <-ctx.Done():
				close(work)
				return ctx.Err()
			case <-time.After(d):
			}
		}
		c.mu.Lock()
		queue := j.Queue
		if queue == "" {
			queue = c.queues[0].Name
		}
		c.jobs[namespaceOf(queue)+"/"+j.Name] = &jobState{spec: j, queue: queue, shape: shapes[j.Name], submit: at,
			live: map[types.UID]*podState{}, attempts: map[int]int{}}
		c.mu.Unlock()
		select {
		case work <- j:
		case <-ctx.Done():
			close(work)
			return ctx.Err()
		}
	}
	close(work)
	var first error
	for range submitters {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *cluster) submit(ctx context.Context, kube kubernetes.Interface, pgs pgclient.Interface, j trace.Job, shape podShape, contender string) error {
	queue := j.Queue
	if queue == "" {
		queue = c.queues[0].Name
	}
	if pgs != nil && j.Pods > 1 {
		err := retry(ctx, func() error {
			_, err := pgs.SchedulingV1alpha1().PodGroups(namespaceOf(queue)).Create(ctx, podGroupFor(j, queue), metav1.CreateOptions{})
			return err
		})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("PodGroup %s: %w", j.Name, err)
		}
	}
	var made *batchv1.Job
	err := retry(ctx, func() error {
		var err error
		made, err = kube.BatchV1().Jobs(namespaceOf(queue)).Create(ctx, jobFor(j, queue, shape, contender), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("job %s: %w", j.Name, err)
	}
	c.mu.Lock()
	c.jobs[made.Namespace+"/"+made.Name].obj = made
	c.mu.Unlock()
	for i := range j.Pods {
		err := retry(ctx, func() error {
			_, err := kube.CoreV1().Pods(made.Namespace).Create(ctx, podFor(made, i, 0), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("job %s pod %d: %w", j.Name, i, err)
		}
	}
	return nil
}

// waitReady waits until the scheduler's /readyz answers ok.
func waitReady(ctx context.Context, sched *controlplane.Scheduler) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		if err := sched.Exited(); err != nil {
			return false, fmt.Errorf("scheduler exited: %w (log %s)", err, sched.LogPath)
		}
		_, err := sched.Get(ctx, "/readyz")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("scheduler not ready: %w (log %s)", err, sched.LogPath)
	}
	return nil
}
