// Package stalegang gives back what gangs bound below their min hold
// (SPEC §2.6): after a crash mid-bind, a bind that failed once others of
// the min had bound, or members lost and not replaced, such a gang's cards
// sit idle for good. The scheduling state notes when a gang is found so
// (pkg/state, stale.go); the Reaper, run by the replica that leads only,
// evicts the bound pods of those found so for longer than the Permit wait
// plus staleGangSeconds, as KAI evicts its stale gangs.
package stalegang

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/evict"
	"cardinal.dev/cardinal/pkg/metrics"
	"cardinal.dev/cardinal/pkg/state"
)

// Reaper evicts the bound pods of stale gangs. It is a controller-runtime
// Runnable that needs leader election (pkg/controllers adds it).
type Reaper struct {
	State  *state.State
	Client kubernetes.Interface
	// Pods reads gang pods, finished ones too, from the status writers'
	// cache: kube-scheduler's informer drops finished pods, and members
	// that succeeded count towards their gang's min.
	Pods client.Reader

	mu sync.Mutex
	// evicting are the pods whose eviction is under way (true) or made
	// and not yet seen by the state (false), so that a gang found stale
	// again before the informer shows them terminating does not evict
	// them twice.
	evicting map[types.UID]bool
}

// NeedLeaderElection: only the replica that schedules gives gangs back.
func (r *Reaper) NeedLeaderElection() bool { return true }

// period is how often the state is asked for stale gangs: a fraction of
// how long a gang may stay so, between 1 and 10 seconds.
func period(after time.Duration) time.Duration {
	return min(max(after/8, time.Second), 10*time.Second)
}

// Start looks for stale gangs until ctx ends.
func (r *Reaper) Start(ctx context.Context) error {
	after := r.State.Settings().StaleGangAfter
	if after <= 0 {
		return nil // staleGangSeconds: 0
	}
	r.evicting = map[types.UID]bool{}
	wait.UntilWithContext(ctx, r.reap, period(after))
	return nil
}

func (r *Reaper) reap(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("stale-gangs")
	stale := r.State.StaleGangs()
	r.forgetGone(stale)
	for _, g := range stale {
		done, err := r.succeeded(ctx, g)
		if err != nil {
			logger.Error(err, "Counting a gang's finished pods", "podGroup", g.Key)
			continue
		}
		if g.Bound+done >= g.Min {
			continue // the rest of its min finished its work
		}
		pods := r.claim(g.Pods)
		if len(pods) == 0 {
			continue
		}
		logger.Info("Giving back a gang bound below its min", "podGroup", g.Key, "min", g.Min, "bound", g.Bound, "since", g.Since)
		note := r.State.GivingBack(g)
		metrics.StaleGangs.Inc()
		for _, p := range pods {
			go func() {
				err := evict.WithRetries(ctx, p, func(ctx context.Context) error { return evict.Pod(ctx, r.Client, p, note) })
				r.evicted(p, err == nil)
				if err != nil {
					logger.Error(err, "Evicting a pod of a gang bound below its min failed", "pod", klog.KObj(p), "podGroup", g.Key)
					return
				}
				metrics.StaleGangPods.Inc()
			}()
		}
	}
}

// succeeded counts the gang's pods that finished their work.
func (r *Reaper) succeeded(ctx context.Context, g state.StaleGang) (int, error) {
	ns, name := g.Key.Split()
	var pods corev1.PodList
	if err := r.Pods.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1alpha1.PodGroupLabel: name}); err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodSucceeded {
			n++
		}
	}
	return n, nil
}

// claim takes the pods whose eviction is not under way or done.
func (r *Reaper) claim(pods []*corev1.Pod) []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range pods {
		if _, busy := r.evicting[p.UID]; !busy {
			r.evicting[p.UID] = true
			out = append(out, p)
		}
	}
	return out
}

// evicted ends a pod's eviction: one that failed may be tried again; one
// that was made stays claimed until the state no longer lists the pod
// (the informer shows it terminating), so it is not evicted twice.
func (r *Reaper) evicted(p *corev1.Pod, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.evicting[p.UID] = false
	} else {
		delete(r.evicting, p.UID)
	}
}

// forgetGone forgets the evicted pods the state lists no more.
func (r *Reaper) forgetGone(stale []state.StaleGang) {
	listed := map[types.UID]bool{}
	for _, g := range stale {
		for _, p := range g.Pods {
			listed[p.UID] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, inFlight := range r.evicting {
		if !inFlight && !listed[uid] {
			delete(r.evicting, uid)
		}
	}
}
