package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// checkNow checks the cluster while the run goes on, on a snapshot of
// every object it made: the invariants of check.go, after collecting what
// was orphaned. finish checks once the faults stop.
func (r *runner) checkNow(ctx context.Context) error {
	s, err := r.snapshot(ctx)
	if err != nil {
		return err
	}
	if orphans, err := r.collectOrphans(ctx, s); err != nil {
		return err
	} else if orphans {
		if s, err = r.snapshot(ctx); err != nil {
			return err
		}
	}
	r.violate(r.checker.check(s, time.Now())...)
	r.res.Checks = r.checker.checks
	return nil
}

// collectOrphans deletes, as kube-controller-manager's pod garbage
// collector would, the workloads of pods bound to a node that is gone: a
// pod assumed there before the node was drained may bind after. Left,
// it would be charged by a replica that saw the node and not by one
// started since, and the run would judge the difference.
func (r *runner) collectOrphans(ctx context.Context, s snapshot) (found bool, err error) {
	for i := range s.pods {
		p := &s.pods[i]
		if p.Spec.NodeName == "" || r.w.nodes[p.Spec.NodeName] != nil {
			continue
		}
		if wl := r.w.owner(p); wl != nil && !wl.deleted {
			r.log("  pod %s/%s bound to %s, which is gone: delete %s %s", p.Namespace, p.Name, p.Spec.NodeName, wl.kind, wl.name)
			if err := r.deleteWorkWith(ctx, wl, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				return found, err
			}
			found = true
		}
	}
	return found, nil
}

func (r *runner) snapshot(ctx context.Context) (snapshot, error) {
	var s snapshot
	pods, err := r.c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: RunLabel + "=" + r.w.run})
	if err != nil {
		return s, err
	}
	s.pods = pods.Items
	return s, nil
}

// finish stops the faults, lets the run go quiet and checks the last
// invariants: the leader's numbers equal a recount from the API, Queue
// status too, and a pod that fits binds.
func (r *runner) finish(ctx context.Context) error {
	r.proxy.SetRate(0)
	// What cannot run now will not: pods left pending hold reservations
	// the API does not show. Gangs not whole go whole; of the others, what
	// is not bound goes.
	for _, wl := range r.w.liveWork("") {
		if err := r.settle(ctx, wl); err != nil {
			return err
		}
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, quietWithin*r.slowdown, true, func(ctx context.Context) (bool, error) {
		// A leader that lost its lease (a kube-apiserver restart at the
		// last step) ends by design: another takes its place, as its
		// Deployment would start one.
		for range r.reapExited() {
			if err := r.startScheduler(); err != nil {
				return false, err
			}
		}
		if err := r.checkNow(ctx); err != nil {
			return false, err
		}
		// A pending pod changed between its read and its deletion (the
		// precondition keeps a bind that landed) is deleted on a later
		// pass. A ReplicaSet the deployment controller had not yet seen
		// deleted may have made pods since: no garbage collector runs here.
		for _, wl := range r.w.work {
			if wl.kind == "deployment" || !wl.deleted {
				if err := r.settle(ctx, wl); err != nil {
					return false, err
				}
			}
		}
		for _, q := range r.w.queues {
			if err := r.c.kube.CoreV1().Pods(q.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
				metav1.ListOptions{LabelSelector: RunLabel + "=" + r.w.run + ",app", FieldSelector: "spec.nodeName="}); err != nil {
				return false, err
			}
		}
		last = r.compareNumbers(ctx)
		return last == "", nil
	})
	if err != nil {
		if last == "" {
			return fmt.Errorf("waiting for the run to go quiet: %w", err)
		}
		r.violate(fmt.Sprintf("once quiet, the scheduler's numbers still differ from the API after %s: %s", quietWithin*r.slowdown, last))
	}
	return r.probe(ctx)
}

// settle ends a workload's pending part: a Deployment is deleted; a gang
// with fewer than min pods bound is deleted whole; of the rest, pods not
// bound are deleted.
func (r *runner) settle(ctx context.Context, wl *workload) error {
	if wl.kind == "deployment" {
		return r.deleteWork(ctx, wl)
	}
	pods, bound, err := r.podsOf(ctx, wl)
	if err != nil {
		return err
	}
	if bound < wl.min {
		return r.deleteWork(ctx, wl)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			continue
		}
		pre := metav1.Preconditions{ResourceVersion: &p.ResourceVersion}
		_ = r.c.kube.CoreV1().Pods(wl.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &pre})
	}
	return nil
}

// compareNumbers says how the leader's card and cpu numbers differ from a
// recount of bound pods, or "".
func (r *runner) compareNumbers(ctx context.Context) string {
	s, err := r.snapshot(ctx)
	if err != nil {
		return err.Error()
	}
	for _, p := range s.pods {
		if p.Spec.NodeName == "" {
			return fmt.Sprintf("pod %s/%s still pending", p.Namespace, p.Name)
		}
	}
	cpu, cards := r.checker.usage(s)
	leader := r.leader(ctx)
	if leader == nil {
		return "no replica leads"
	}
	body, err := leader.Get(ctx, "/metrics")
	if err != nil {
		return err.Error()
	}
	got := controlplane.Samples(string(body))
	var diffs []string
	for _, q := range r.w.queues {
		for _, m := range []string{h200, a100, h200MIG} {
			want := float64(cards[q.Name][m])
			if have := got["cardinal_queue_card_allocated"][fmt.Sprintf(`{model=%q,queue=%q}`, m, q.Name)]; have != want {
				diffs = append(diffs, fmt.Sprintf("queue %s %s: metrics %v, bound pods %v", q.Name, m, have, want))
			}
		}
		want := float64(cpu[q.Name]) / 1000
		if have := got["cardinal_queue_allocated"][fmt.Sprintf(`{queue=%q,resource="cpu"}`, q.Name)]; have != want {
			diffs = append(diffs, fmt.Sprintf("queue %s cpu: metrics %v, bound pods %v", q.Name, have, want))
		}
		qo, err := r.c.cardinal.SchedulingV1alpha1().Queues().Get(ctx, q.Name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		status := map[string]int64{}
		for _, cs := range qo.Status.Cards {
			status[cs.Name] = int64(cs.Allocated)
		}
		for _, m := range []string{h200, a100, h200MIG} {
			if status[m] != cards[q.Name][m] {
				diffs = append(diffs, fmt.Sprintf("queue %s %s: status %d, bound pods %d", q.Name, m, status[m], cards[q.Name][m]))
			}
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// probe checks the scheduler still schedules: a plain pod that fits binds.
func (r *runner) probe(ctx context.Context) error {
	q := builder.MakeQueue(r.w.run + "-probe").Obj()
	if err := r.createQueue(ctx, q); err != nil {
		return err
	}
	r.w.queues = append(r.w.queues, q)
	p := builder.MakePod(q.Name, "probe").Label(RunLabel, r.w.run).NodeSelector(RunLabel, r.w.run).Req(corev1.ResourceCPU, "10m").Obj()
	if _, err := r.c.kube.CoreV1().Pods(q.Name).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, fitsWithin*r.slowdown, true, func(ctx context.Context) (bool, error) {
		got, err := r.c.kube.CoreV1().Pods(q.Name).Get(ctx, "probe", metav1.GetOptions{})
		return err == nil && got.Spec.NodeName != "", nil
	})
	if err != nil {
		r.violate(fmt.Sprintf("a plain pod that fits did not bind within %s", fitsWithin*r.slowdown))
	}
	return nil
}
