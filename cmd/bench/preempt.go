package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// The preemption workload: every node is full of low-priority work bound
// before the scheduler starts, in thirds: one elastic gang (min 4 of 8
// one-card pods), 8 single pods, or one rigid gang (min 8 of 8). Once the
// scheduler is ready, high-priority gangs of one-card pods arrive and can
// run only by preemption.
const (
	lowClass, highClass = "bench-low", "bench-high"
	// fillerLabel marks the low-priority work: it is not counted as bound.
	fillerLabel = "bench.cardinal.dev/filler"
)

// preemptResult is what the preemption workload measured.
type preemptResult struct {
	// Gangs arrived and gangs whose every pod was bound.
	Gangs, GangsBound int
	// GangsPerSecond is gangs bound over the time from the first arrival to
	// the last gang bound.
	GangsPerSecond float64
	// P50 and P99 of the time from a gang's arrival to its min bound, ms.
	P50, P99 float64
	// Evictions are low-priority pods deleted; per gang bound.
	Evictions         int
	EvictionsPerGang  float64
	PartialVictimGang int
}

// priorityClasses are the workload's two priorities; Cardinal takes the
// low one as preemptible (below preemptibleBelowPriority) and the high
// one as not.
func priorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: lowClass}, Value: 10},
		{ObjectMeta: metav1.ObjectMeta{Name: highClass}, Value: 1000},
	}
}

// victimGang names the low-priority gang on node i and its min, "" for a
// node of single pods.
func victimGang(i, size int) (string, int) {
	switch i % 3 {
	case 0:
		return fmt.Sprintf("low-%d", i), size / 2
	case 2:
		return fmt.Sprintf("low-%d", i), size
	}
	return "", 0
}

// victimGroups are the low-priority gangs' PodGroups.
func (w workload) victimGroups() []*schedv1alpha1.PodGroup {
	var out []*schedv1alpha1.PodGroup
	for i := range w.Nodes {
		if g, min := victimGang(i, w.GPUs); g != "" {
			out = append(out, &schedv1alpha1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: g},
				Spec:       schedv1alpha1.PodGroupSpec{MinMember: int32(min)},
			})
		}
	}
	return out
}

// fillers are the low-priority pods, already bound to their nodes.
func (w workload) fillers() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, w.Nodes*w.GPUs)
	for i := range w.Nodes {
		for j := range w.GPUs {
			p := builder.MakePod(benchNamespace, fmt.Sprintf("low-%d-%d", i, j)).Req(corev1.ResourceCPU, "100m").Req(corev1.ResourceMemory, "256Mi").
				GPU(1).Label(v1alpha1.QueueLabel, queueName(0)).Label(fillerLabel, "true")
			if g, _ := victimGang(i, w.GPUs); g != "" {
				p.Label(schedv1alpha1.PodGroupLabel, g)
			}
			p.Spec.PriorityClassName = lowClass
			p.Spec.NodeName = fmt.Sprintf("node-%d", i)
			out = append(out, p.Obj())
		}
	}
	return out
}

// createFillers makes the priority classes, the low-priority gangs and the
// pods that fill every node.
func createFillers(ctx context.Context, kube kubernetes.Interface, pgs func(*schedv1alpha1.PodGroup) error, w workload) error {
	for _, pc := range priorityClasses() {
		if _, err := kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	var jobs []func() error
	for _, pg := range w.victimGroups() {
		jobs = append(jobs, func() error { return pgs(pg) })
	}
	if err := parallel(jobs); err != nil {
		return err
	}
	jobs = jobs[:0]
	for _, p := range w.fillers() {
		jobs = append(jobs, func() error {
			_, err := kube.CoreV1().Pods(benchNamespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	return parallel(jobs)
}

// evictions follows the low-priority pods the scheduler deletes.
type evictions struct {
	mu      sync.Mutex
	deleted int
	left    map[string]int // low-priority gang -> its pods not deleted
	min     map[string]int
}

func newEvictions(w workload) *evictions {
	e := &evictions{left: map[string]int{}, min: map[string]int{}}
	for i := range w.Nodes {
		if g, min := victimGang(i, w.GPUs); g != "" {
			e.left[g], e.min[g] = w.GPUs, min
		}
	}
	return e
}

func (e *evictions) handler() cache.ResourceEventHandler {
	return cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			p, ok := obj.(*corev1.Pod)
			return ok && p.Labels[fillerLabel] != ""
		},
		Handler: cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			p := obj.(*corev1.Pod)
			e.mu.Lock()
			defer e.mu.Unlock()
			e.deleted++
			if g := p.Labels[schedv1alpha1.PodGroupLabel]; g != "" {
				e.left[g]--
			}
		}},
	}
}

// partial counts low-priority gangs left running below their min.
func (e *evictions) partial() (deleted, partial int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for g, n := range e.left {
		if n > 0 && n < e.min[g] {
			partial++
		}
	}
	return e.deleted, partial
}

// arrive creates the high-priority gangs' pods, gang after gang, and
// returns when each gang arrived.
func arrive(ctx context.Context, cp *controlplane.ControlPlane, w workload) (map[string]time.Time, error) {
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(cfg)
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	var jobs []func() error
	for _, p := range w.pods() {
		jobs = append(jobs, func() error {
			g := p.Labels[schedv1alpha1.PodGroupLabel]
			mu.Lock()
			if _, ok := arrived[g]; !ok {
				arrived[g] = time.Now()
			}
			mu.Unlock()
			_, err := kube.CoreV1().Pods(benchNamespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	return arrived, parallel(jobs)
}

// gangTimes measures the arrived gangs from the binds seen: how many had
// every pod bound, the rate, and the percentiles of arrival to min bound.
func (b *bindLog) gangTimes(arrived map[string]time.Time, size int) (bound int, perSecond, p50, p99 float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := map[string]time.Time{}
	count := map[string]int{}
	for pod, g := range b.gangOf {
		count[g]++
		if t := b.at[pod]; t.After(last[g]) {
			last[g] = t
		}
	}
	var first, end time.Time
	for _, t := range arrived {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	var waits []float64
	for g, at := range arrived {
		if count[g] < size {
			continue
		}
		bound++
		waits = append(waits, float64(last[g].Sub(at).Milliseconds()))
		if last[g].After(end) {
			end = last[g]
		}
	}
	if bound == 0 {
		return 0, 0, 0, 0
	}
	sort.Float64s(waits)
	if d := end.Sub(first).Seconds(); d > 0 {
		perSecond = float64(bound) / d
	}
	return bound, perSecond, percentile(waits, 0.5), percentile(waits, 0.99)
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// fillerOf tells whether a pod is low-priority work of the preemption workload.
func fillerOf(p *corev1.Pod) bool { return p.Labels[fillerLabel] != "" }
