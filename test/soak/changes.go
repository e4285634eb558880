package soak

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
)

// The steps that change running work's books from outside (SPEC §3.7),
// the run's kubelet, kube-apiserver restarts, and what the schedulers'
// logs must not say.

// changed notes a change to what queues ask for or to the nodes.
func (w *world) changed() { w.changes.note(time.Now()) }

// changes are the times of the run's changes to what queues ask for or
// what the nodes hold: steps, and pods that come or go other than by a
// reclaim. Between two changes, shares stand still.
type changes struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *changes) note(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.times = append(c.times, t)
}

// between tells whether a change was made in [from, to].
func (c *changes) between(from, to time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.times) - 1; i >= 0; i-- {
		if t := c.times[i]; !t.Before(from) && !t.After(to) {
			return true
		} else if t.Before(from) {
			break
		}
	}
	return false
}

// relabel changes the labels of a workload whose pods are all bound: its
// queue (on the pods, or its PodGroup), or, for preemptible work, its
// preemptibility to non-preemptible (on the pods, the PodGroup, or the
// Deployment that owns them; for a gang's PodGroup sometimes
// semi-preemptible). Its pods stay charged as they were placed; a
// Deployment's pods placed later follow its new label.
func (r *runner) relabel(ctx context.Context, i, choice, aux int) error {
	ws := r.w.liveWork("")
	// The first workload from the chosen one on with pods bound; all of
	// them bound to relabel its PodGroup or owner.
	var wl *workload
	var pods []corev1.Pod
	whole := false
	for k := range ws {
		cand := ws[(choice+k)%len(ws)]
		bound, all, err := r.boundPods(ctx, cand)
		if err != nil {
			return err
		}
		if len(bound) > 0 {
			wl, pods, whole = cand, bound, all
			break
		}
	}
	if wl == nil {
		r.log("  %d: relabel: no workload has pods bound", i)
		return nil
	}
	r.res.Relabels++
	onGroup := wl.kind == "gang" && aux%2 == 0 && whole
	onOwner := wl.kind == "deployment" && aux%2 == 0 && whole
	var labels map[string]string
	var what string
	if (aux/2)%2 == 0 || wl.current() != v1alpha1.Preemptible {
		q := r.w.queues[(aux/4)%len(r.w.queues)]
		if q.Name == wl.queue {
			q = r.w.queues[(aux/4+1)%len(r.w.queues)]
		}
		labels, what = map[string]string{v1alpha1.QueueLabel: q.Name}, "queue "+q.Name
		onOwner = false // a Deployment's label does not choose a queue
	} else {
		v := v1alpha1.NonPreemptible
		if onGroup && (aux/4)%3 == 0 {
			v = v1alpha1.SemiPreemptible
		}
		labels, what = map[string]string{v1alpha1.PreemptibilityLabel: v}, v
		if onOwner {
			wl.relabelledAt, wl.preemptAfter = time.Now(), v
		}
	}
	r.w.changed()
	switch {
	case onGroup:
		r.log("  %d: relabel PodGroup %s/%s %s", i, wl.ns, wl.name, what)
		return r.patchLabels(ctx, "podgroups", wl.ns, wl.name, labels)
	case onOwner:
		r.log("  %d: relabel Deployment %s/%s %s", i, wl.ns, wl.name, what)
		_, err := r.c.kube.AppsV1().Deployments(wl.ns).Patch(ctx, wl.name, types.MergePatchType, labelPatch(labels), metav1.PatchOptions{})
		return ignoreNotFound(err)
	}
	r.log("  %d: relabel the %d bound pods of %s %s/%s %s", i, len(pods), wl.kind, wl.ns, wl.name, what)
	for _, p := range pods {
		if err := r.patchLabels(ctx, "pods", wl.ns, p.Name, labels); err != nil {
			return err
		}
	}
	return nil
}

// changeMin sets a gang's minMember to between 1 and how many of its pods
// are bound, never above: a raised min its bound pods do not reach would
// be a stale gang, given back (SPEC §2.6).
func (r *runner) changeMin(ctx context.Context, i, choice, aux int) error {
	gangs := r.w.liveWork("gang")
	var wl *workload
	bound := 0
	for k := range gangs {
		cand := gangs[(choice+k)%len(gangs)]
		pods, _, err := r.boundPods(ctx, cand)
		if err != nil {
			return err
		}
		if len(pods) > 0 && len(pods) != cand.min || len(pods) > 1 {
			wl, bound = cand, len(pods)
			break
		}
	}
	if wl == nil {
		return nil
	}
	m := 1 + aux%bound
	if m == wl.min {
		m = 1 + (m % bound) // another, within the bound pods
	}
	if m == wl.min {
		return nil
	}
	r.log("  %d: gang %s/%s minMember %d -> %d (%d bound)", i, wl.ns, wl.name, wl.min, m, bound)
	r.res.MinChanges++
	r.w.changed()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg, err := r.c.groups.SchedulingV1alpha1().PodGroups(wl.ns).Get(ctx, wl.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Spec.MinMember = int32(m)
		_, err = r.c.groups.SchedulingV1alpha1().PodGroups(wl.ns).Update(ctx, pg, metav1.UpdateOptions{})
		return err
	})
	if err == nil {
		wl.min, wl.minLow = m, min(wl.minLow, m)
	}
	return ignoreNotFound(err)
}

// boundPods lists a workload's pods that are bound and stay (not
// terminating, not being evicted), and whether they are all its pods.
func (r *runner) boundPods(ctx context.Context, wl *workload) (bound []corev1.Pod, all bool, err error) {
	var pods []corev1.Pod
	if wl.kind == "deployment" {
		list, err := r.c.kube.CoreV1().Pods(wl.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + wl.name})
		if err != nil {
			return nil, false, err
		}
		pods = list.Items
	} else if pods, _, err = r.podsOf(ctx, wl); err != nil {
		return nil, false, err
	}
	for i := range pods {
		if p := &pods[i]; p.Spec.NodeName != "" && p.DeletionTimestamp == nil && !evicted(p) {
			bound = append(bound, *p)
		}
	}
	all = len(bound) == len(pods) && (wl.kind != "deployment" || len(pods) == int(wl.replicas))
	return bound, all, nil
}

func (r *runner) patchLabels(ctx context.Context, resource, ns, name string, labels map[string]string) error {
	var err error
	if resource == "pods" {
		_, err = r.c.kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, labelPatch(labels), metav1.PatchOptions{})
	} else {
		_, err = r.c.groups.SchedulingV1alpha1().PodGroups(ns).Patch(ctx, name, types.MergePatchType, labelPatch(labels), metav1.PatchOptions{})
	}
	return ignoreNotFound(err)
}

func labelPatch(labels map[string]string) []byte {
	var parts []string
	for _, k := range sortedKeys(labels) {
		parts = append(parts, fmt.Sprintf("%q:%q", k, labels[k]))
	}
	return []byte(`{"metadata":{"labels":{` + strings.Join(parts, ",") + `}}}`)
}

// restartAPIServer restarts kube-apiserver, as a control plane upgrade
// does. Leaders that cannot renew their lease meanwhile end, by design,
// and the run starts others in their place.
func (r *runner) restartAPIServer(ctx context.Context, i int) error {
	if !r.opts.RestartAPIServer {
		return nil
	}
	r.log("  %d: restart kube-apiserver", i)
	r.res.APIRestarts++
	return r.opts.ControlPlane.RestartAPIServer(ctx)
}

// kubelet ends the run's terminating pods as a kubelet would: each once
// its grace period is over (a bound pod's deletion waits for it; an
// unbound one's does not).
func (r *runner) kubelet(ctx context.Context, store cache.Store) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, obj := range store.List() {
			p := obj.(*corev1.Pod)
			if p.DeletionTimestamp == nil || p.Spec.NodeName == "" || now.Before(p.DeletionTimestamp.Time) {
				continue
			}
			_ = r.c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
		}
	}
}

// checkLogs, once the run is quiet, checks that no scheduler ended by
// itself since the last step, and reads every scheduler's log the run
// started for a data race (the -race seeds report them as they happen).
func (r *runner) checkLogs() {
	r.reapExited()
	for _, s := range r.started {
		data, err := os.ReadFile(s.LogPath)
		if err != nil {
			continue
		}
		if i := strings.Index(string(data), "WARNING: DATA RACE"); i >= 0 {
			r.violate(fmt.Sprintf("a data race (log %s):\n%s", s.LogPath, excerpt(string(data)[i:], 60)))
		}
	}
}

// reapExited takes out the schedulers that ended: by design when they lost
// their lease, else a crash.
func (r *runner) reapExited() []*controlplane.Scheduler {
	var ended []*controlplane.Scheduler
	for _, s := range r.scheds {
		if err := s.Exited(); err != nil {
			if log, _ := os.ReadFile(s.LogPath); !lostLease(string(log)) && !portTaken(string(log)) {
				r.violate(fmt.Sprintf("a scheduler ended by itself: %v (log %s)%s", err, s.LogPath, crashOf(string(log))))
			}
			ended = append(ended, s)
		}
	}
	for _, s := range ended {
		r.scheds = without(r.scheds, s)
	}
	return ended
}

// portTaken tells whether a scheduler could not start because the port the
// harness picked for it was taken by another process meanwhile (parallel
// runs share the host): the harness's race, not the scheduler's.
func portTaken(log string) bool {
	return strings.Contains(log, `"command failed" err="failed to create listener`) && strings.Contains(log, "address already in use")
}

func excerpt(s string, lines int) string {
	ls := strings.SplitN(s, "\n", lines+1)
	return strings.Join(ls[:min(lines, len(ls))], "\n")
}
