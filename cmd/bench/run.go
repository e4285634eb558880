package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/pkg/contenders"
	"cardinal.dev/cardinal/pkg/controlplane"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
)

// scheduler is one contender (pkg/contenders).
type scheduler = contenders.Scheduler

// result is what one run of one workload with one scheduler measured.
type result struct {
	Workload, Scheduler string
	// Runs is how many runs this one is the median of.
	Runs        int
	Pods, Bound int
	// PodsPerSecond is bound pods over the time from the scheduler being ready to the last bind.
	PodsPerSecond float64
	// AttemptP50 and AttemptP99 are scheduling_attempt_duration percentiles, in ms;
	// AlgorithmP99 and BindMean (ms) split the attempt (metrics.go).
	AttemptP50, AttemptP99 float64
	AlgorithmP99, BindMean float64
	// PluginP99 is the p99 of plugin execution, ms, by "Plugin/ExtensionPoint".
	PluginP99 map[string]float64
	// PartialGangs are gangs with some but fewer than min pods bound at the end.
	PartialGangs int
	// Preempt is what the preemption workload measured, nil for others.
	Preempt *preemptResult
	// FirstModelFill is, for pods with card-name alternatives, how full
	// the first alternative's nodes were at the end, in pods over the pods
	// they hold: how far a scheduler followed the preference (SPEC §4.3).
	// Packing gives 1; spreading evenly, the pods' share of the cluster's
	// cards. Nil where not measured.
	FirstModelFill *float64
	// FirstBind is how long after the scheduler was ready its first bind
	// was seen: the start-up the rate includes.
	FirstBind time.Duration
	// Interleaved is what the interleaved workload measured, nil for others.
	Interleaved *interleavedResult
	// Reclaim is what the reclaim storm measured, nil for others.
	Reclaim *reclaimResult
	// SchedulerCPU and ControlPlaneCPU are the CPU milliseconds the
	// scheduler, and etcd with kube-apiserver, used per bound pod while it
	// ran: on a shared 2-core machine where all three compete, what a
	// scheduler costs the apiserver slows it as much as its own work.
	SchedulerCPU, ControlPlaneCPU float64
}

// quiet is how long binding must stop before a contended run ends.
const quiet = 5 * time.Second

// runOne starts a fresh control plane, creates the workload's objects, then
// starts the scheduler and measures until every pod is bound (or, for a
// contended workload, binding stops).
func runOne(ctx context.Context, root string, w workload, s scheduler, profileDir string, requests bool) (result, error) {
	res := result{Workload: w.Name, Scheduler: s.Name, Pods: len(w.pods())}
	cp, err := controlplane.Start(ctx, controlplane.Options{PriorityAndFairness: true})
	if err != nil {
		return res, err
	}
	defer cp.Stop()
	if err := install(ctx, cp, root); err != nil {
		return res, err
	}
	if s.Peer {
		if err := installPeer(ctx, cp, root); err != nil {
			return res, err
		}
	}
	cfg := cp.Config()
	kube := kubernetes.NewForConfigOrDie(cfg)
	w.affinity = w.AffinityForDefault && s.Name == "default"
	if err := create(ctx, cp, w); err != nil {
		return res, err
	}

	binds := newBindLog()
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(benchNamespace))
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { binds.observe(obj.(*corev1.Pod)) },
		AddFunc:    func(obj any) { binds.observe(obj.(*corev1.Pod)) },
	}); err != nil {
		return res, err
	}
	evicted := newEvictions(w)
	if w.Preempt {
		if _, err := pods.AddEventHandler(evicted.handler()); err != nil {
			return res, err
		}
	}
	var stormed *storm
	if w.Reclaim {
		stormed = newStorm(w)
		if _, err := pods.AddEventHandler(stormed.handler()); err != nil {
			return res, err
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	sched, err := cp.StartSchedulerBinary(s.Binary, s.Config, s.Peer, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*")
	if err != nil {
		return res, err
	}
	defer sched.Stop()
	ready, err := waitReady(ctx, sched)
	if err != nil {
		return res, err
	}
	if profileDir != "" {
		go profileCPU(ctx, sched.Port, filepath.Join(profileDir, w.Name+"-"+s.Name+".pprof"))
	}
	schedCPU, cpCPU := sched.CPUSeconds(), cp.CPUSeconds()
	var before map[string]float64
	if requests {
		if before, err = apiserverRequests(ctx, kube); err != nil {
			return res, err
		}
	}
	var arrived map[string]time.Time
	if w.Preempt {
		if arrived, err = arrive(ctx, cp, w); err != nil {
			return res, err
		}
	}
	if w.Interleaved {
		if res.Interleaved, err = runInterleaved(ctx, cp, w, pods, ready, w.Timeout); err != nil {
			return res, err
		}
		for _, g := range w.arrivingGangs() {
			res.Pods += g.Pods
		}
	}
	if w.Reclaim {
		if res.Reclaim, err = runStorm(ctx, cp, w, stormed, w.Timeout); err != nil {
			return res, err
		}
		arriving, _ := w.stormPods()
		for _, p := range arriving {
			if !fillerOf(p) {
				res.Pods++
			}
		}
	}
	// Until every pod is bound, or a contended run stops binding; a run
	// that reaches neither within the timeout is reported as it stands.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Minute, false, func(context.Context) (bool, error) {
		if err := sched.Exited(); err != nil {
			return false, fmt.Errorf("%s exited: %w (log %s)", s.Name, err, sched.LogPath)
		}
		n, last := binds.count()
		return w.Interleaved || w.Reclaim || n == res.Pods || (w.Contended && n > 0 && time.Since(last) > quiet), nil
	})
	if err != nil && !wait.Interrupted(err) {
		return res, err
	}
	res.Bound, res.PodsPerSecond = binds.rate(ready)
	res.FirstBind = binds.first(ready)
	if res.Bound > 0 {
		res.SchedulerCPU = (sched.CPUSeconds() - schedCPU) * 1000 / float64(res.Bound)
		res.ControlPlaneCPU = (cp.CPUSeconds() - cpCPU) * 1000 / float64(res.Bound)
	}
	if requests {
		after, err := apiserverRequests(ctx, kube)
		if err != nil {
			return res, err
		}
		printRequests(before, after)
	}
	res.PartialGangs = binds.partialGangs(w.GangSize)
	if res.Reclaim != nil {
		res.PartialGangs = res.Reclaim.PartialGangs
	}
	if w.CardName != "" && len(w.Models) > 1 {
		fill := float64(binds.onModel(w.modelOf, w.Models[0])) / float64(w.firstModelRoom())
		res.FirstModelFill = &fill
	}
	if w.Preempt {
		pr := &preemptResult{Gangs: w.Gangs}
		pr.GangsBound, pr.GangsPerSecond, pr.P50, pr.P99 = binds.gangTimes(arrived, w.GangSize)
		pr.Evictions, pr.PartialVictimGang = evicted.partial()
		if pr.GangsBound > 0 {
			pr.EvictionsPerGang = float64(pr.Evictions) / float64(pr.GangsBound)
		}
		res.Preempt = pr
	}
	metrics, err := scrape(ctx, sched.Port)
	if err != nil {
		return res, err
	}
	res.AttemptP50, res.AttemptP99, res.PluginP99 = metrics.attempt(0.5), metrics.attempt(0.99), metrics.pluginP99()
	res.AlgorithmP99, res.BindMean = metrics.algorithm(0.99), metrics.bindMean()
	if requests {
		for _, m := range metrics.families["scheduler_schedule_attempts_total"].GetMetric() {
			fmt.Printf("    %6.0f scheduling attempts %s\n", m.GetCounter().GetValue(), label(m, "result"))
		}
	}
	return res, nil
}

func install(ctx context.Context, cp *controlplane.ControlPlane, root string) error {
	return cp.Install(ctx, filepath.Join(root, "config"))
}

// installPeer installs what scheduler-plugins' CapacityScheduling reads:
// its ElasticQuota CRD and one ElasticQuota for the bench namespace that
// never limits.
func installPeer(ctx context.Context, cp *controlplane.ControlPlane, root string) error {
	if err := contenders.InstallPeerCRDs(ctx, cp, root); err != nil {
		return err
	}
	a, err := controlplane.NewApplier(cp.Config())
	if err != nil {
		return err
	}
	unlimited := map[string]any{"cpu": "1000000", "memory": "1000Ti", "nvidia.com/gpu": "1000000", "pods": "1000000"}
	eq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
		"metadata": map[string]any{"name": "bench", "namespace": benchNamespace},
		"spec":     map[string]any{"min": unlimited, "max": unlimited},
	}}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": benchNamespace}}}
	return a.Apply(ctx, []*unstructured.Unstructured{ns, eq}, false)
}

// create makes the nodes, queues, PodGroups and pods, with a few clients in
// parallel, before any scheduler runs.
func create(ctx context.Context, cp *controlplane.ControlPlane, w workload) error {
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(cfg)
	cardinal := cardinalclient.NewForConfigOrDie(cfg)
	pgs := pgclient.NewForConfigOrDie(cfg)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var jobs []func() error
	for _, n := range w.nodes() {
		jobs = append(jobs, func() error { _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); return err })
	}
	for _, q := range w.queues() {
		jobs = append(jobs, func() error {
			_, err := cardinal.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{})
			return err
		})
	}
	for _, pg := range w.podGroups() {
		jobs = append(jobs, func() error {
			_, err := pgs.SchedulingV1alpha1().PodGroups(benchNamespace).Create(ctx, pg, metav1.CreateOptions{})
			return err
		})
	}
	if err := parallel(jobs); err != nil {
		return err
	}
	if w.Reclaim {
		// B's pods arrive once the scheduler runs (runStorm).
		return createHolders(ctx, kube, pgs, w)
	}
	if w.Preempt {
		// The high-priority pods arrive once the scheduler runs (arrive).
		return createFillers(ctx, kube, func(pg *schedv1alpha1.PodGroup) error {
			_, err := pgs.SchedulingV1alpha1().PodGroups(benchNamespace).Create(ctx, pg, metav1.CreateOptions{})
			return err
		}, w)
	}
	// A gang that is a Job: the Job first, then its pods under it, as its
	// controller makes them.
	owners := map[string]*batchv1.Job{}
	var mu sync.Mutex
	jobs = jobs[:0]
	for _, j := range w.jobs() {
		jobs = append(jobs, func() error {
			made, err := kube.BatchV1().Jobs(benchNamespace).Create(ctx, j, metav1.CreateOptions{})
			mu.Lock()
			owners[j.Name] = made
			mu.Unlock()
			return err
		})
	}
	if err := parallel(jobs); err != nil {
		return err
	}
	jobs = jobs[:0]
	for _, p := range w.pods() {
		if j := owners[jobOf(p.Name)]; j != nil {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}
		}
		jobs = append(jobs, func() error {
			_, err := kube.CoreV1().Pods(benchNamespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	return parallel(jobs)
}

func parallel(jobs []func() error) error {
	const workers = 16
	ch := make(chan func() error)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for j := range ch {
				if err := j(); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until the scheduler's /readyz answers ok: its informers
// have synced and its event handlers have seen every object.
func waitReady(ctx context.Context, sched *controlplane.Scheduler) (time.Time, error) {
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		if err := sched.Exited(); err != nil {
			return false, fmt.Errorf("scheduler exited: %w (log %s)", err, sched.LogPath)
		}
		_, err := get(ctx, sched.Port, "/readyz")
		return err == nil, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduler not ready: %w (log %s)", err, sched.LogPath)
	}
	return time.Now(), nil
}

// apiserverRequests counts the requests kube-apiserver has served so far.
func apiserverRequests(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return requestCounts(bytes.NewReader(body))
}

// printRequests prints the requests served between two counts, most first,
// leaving out reads, which informers' watches make rare.
func printRequests(before, after map[string]float64) {
	type count struct {
		key string
		n   float64
	}
	var counts []count
	for key, n := range after {
		if d := n - before[key]; d > 0 && !strings.HasPrefix(key, "GET ") && !strings.HasPrefix(key, "LIST ") && !strings.HasPrefix(key, "WATCH ") {
			counts = append(counts, count{key, d})
		}
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Compare(b.n, a.n) })
	for _, c := range counts {
		if strings.HasSuffix(c.key, " seconds") {
			fmt.Printf("    %6.2f %s\n", c.n, c.key)
		} else {
			fmt.Printf("    %6.0f %s\n", c.n, c.key)
		}
	}
}

// get reads a path of the scheduler's secure port.
func get(ctx context.Context, port int, path string) ([]byte, error) {
	return (&controlplane.Scheduler{Port: port}).Get(ctx, path)
}

// scrape reads the scheduler's /metrics.
func scrape(ctx context.Context, port int) (*metricSet, error) {
	body, err := get(ctx, port, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(body))
}

// profileSeconds is how long profileCPU profiles (--profile-seconds).
var profileSeconds = 10

// profileCPU writes a CPU profile of the scheduler's first profileSeconds
// to path; the report's analysis of where time goes comes from these.
func profileCPU(ctx context.Context, port int, path string) {
	body, err := get(ctx, port, fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		err = os.WriteFile(path, body, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}
