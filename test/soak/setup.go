package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
)

// setUp makes the queues, namespaces and nodes, the proxy and the
// scheduler replicas, and starts watching pods.
func (r *runner) setUp(ctx context.Context) error {
	w := r.w
	if err := ensurePriorityClasses(ctx, r.c); err != nil {
		return err
	}
	w.makeQueues()
	for _, q := range w.queues {
		if err := r.createQueue(ctx, q); err != nil {
			return err
		}
	}
	w.makeTenants()
	for _, t := range w.tenants {
		labels := map[string]string{RunLabel: w.run}
		if t.team != "" {
			labels[TeamLabel] = t.team
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.name, Labels: labels}}
		if _, err := r.c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	r.checker = newChecker(w)
	r.checker.partialGrace *= r.slowdown
	led := r.checker.ledger
	for range 3 + w.pick(4) {
		if err := r.addNode(ctx); err != nil {
			return err
		}
	}
	transport, err := r.opts.ControlPlane.SchedulerTransport()
	if err != nil {
		return err
	}
	if r.proxy, err = NewProxy(r.opts.ControlPlane.URL, transport, w.seed); err != nil {
		return err
	}
	w.faults = []float64{0, 0.05, 0.15, 0.3}[w.pick(4)]
	r.proxy.SetRate(w.faults)
	if r.config, err = soakConfig(r.opts.ConfigPath, r.opts.ControlPlane.Dir, w.run); err != nil {
		return err
	}
	w.replicas = 1 + w.pick(2)
	for range w.replicas {
		if err := r.startScheduler(); err != nil {
			return err
		}
	}
	r.log("  %d queues (%s), tenants %v, %d nodes, %d scheduler replicas (race %v), faults on %.0f%% of writes", len(w.queues), selectors(w.queues), w.tenants, len(w.nodes), w.replicas, r.res.Race, w.faults*100)

	wctx, stop := context.WithCancel(ctx)
	r.stop = stop
	f := informers.NewSharedInformerFactoryWithOptions(r.c.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = RunLabel + "=" + w.run
	}))
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { led.seen(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { led.seen(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				led.gone(p)
			}
		},
	})
	// The preemptions' rounds, from the events that list their victims.
	ev := informers.NewSharedInformerFactoryWithOptions(r.c.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "reason=Preempting"
	}))
	_, _ = ev.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.preempting(led, obj) },
		UpdateFunc: func(_, obj any) { r.preempting(led, obj) },
	})
	f.Start(wctx.Done())
	ev.Start(wctx.Done())
	f.WaitForCacheSync(wctx.Done())
	ev.WaitForCacheSync(wctx.Done())
	go r.kubelet(wctx, inf.GetStore())
	return nil
}

// selectors says which queues serve only their team's namespaces.
func selectors(qs []*v1alpha1.Queue) string {
	var out []string
	for _, q := range qs {
		if q.Spec.NamespaceSelector != nil {
			out = append(out, q.Name+" team only")
		}
	}
	if len(out) == 0 {
		return "none team only"
	}
	return strings.Join(out, ", ")
}

// createQueue makes a queue and a namespace of its name in it.
func (r *runner) createQueue(ctx context.Context, q *v1alpha1.Queue) error {
	if _, err := r.c.cardinal.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.Name, Labels: map[string]string{v1alpha1.QueueLabel: q.Name, RunLabel: r.w.run, TeamLabel: q.Name}}}
	_, err := r.c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// soakConfig writes the scheduler configuration the run uses:
// config/scheduler-config.yaml with a lease a replica takes over within
// seconds, and a short Permit wait.
func soakConfig(path, dir, run string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", err
	}
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil {
		return "", fmt.Errorf("%s: no leaderElection", path)
	}
	le["leaseDuration"] = leaseDuration.String()
	le["renewDeadline"] = (leaseDuration * 2 / 3).String()
	le["retryPeriod"] = (leaseDuration / 6).String()
	profiles, _ := cfg["profiles"].([]any)
	for _, p := range profiles {
		pm, _ := p.(map[string]any)
		pcs, _ := pm["pluginConfig"].([]any)
		for _, pc := range pcs {
			pcm, _ := pc.(map[string]any)
			args, _ := pcm["args"].(map[string]any)
			switch pcm["name"] {
			case "CardinalGang":
				args["permitWaitingTimeSeconds"] = int(permitWait / time.Second)
				args["podGroupBackoffSeconds"] = 2
			case "CardinalCardQuota":
				args["cardUnlimitedCpuMemory"] = false // the cpu checks count card pods' cpu
			}
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, run+"-scheduler-config.yaml")
	return dst, os.WriteFile(dst, out, 0o600)
}

func (r *runner) startScheduler() error {
	s, err := r.opts.ControlPlane.StartSchedulerBinaryVia(r.binary, r.proxy.URL, r.config,
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
	if err != nil {
		return err
	}
	r.scheds = append(r.scheds, s)
	r.started = append(r.started, s)
	return nil
}

// cleanup removes everything the run made, so the next run starts empty.
func (r *runner) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range r.scheds {
		s.Stop() // SIGTERM: the leader gives its lease back for whatever runs next
	}
	if r.stop != nil {
		r.stop()
	}
	if r.proxy != nil {
		r.proxy.Close()
	}
	sel := metav1.ListOptions{LabelSelector: RunLabel + "=" + r.w.run}
	zero := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	namespaces := make([]string, 0, len(r.w.queues)+len(r.w.tenants))
	for _, q := range r.w.queues {
		namespaces = append(namespaces, q.Name)
		_ = r.c.cardinal.SchedulingV1alpha1().Queues().Delete(ctx, q.Name, metav1.DeleteOptions{})
	}
	for _, t := range r.w.tenants {
		namespaces = append(namespaces, t.name)
	}
	for _, ns := range namespaces {
		_ = r.c.kube.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = r.c.kube.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = r.c.groups.SchedulingV1alpha1().PodGroups(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = r.c.kube.CoreV1().Pods(ns).DeleteCollection(ctx, zero, metav1.ListOptions{})
		_ = r.c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	_ = r.c.kube.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
}

func without(ss []*controlplane.Scheduler, s *controlplane.Scheduler) []*controlplane.Scheduler {
	out := ss[:0:0]
	for _, x := range ss {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func priorityClass(name string, v int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
}
