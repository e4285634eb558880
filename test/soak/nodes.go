package soak

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"cardinal.dev/cardinal/test/builder"
)

// The steps that change the cluster's nodes: added, cordoned, removed with
// their pods, and re-sliced between whole cards and MIG.

// addNode makes a node of a random kind.
func (r *runner) addNode(ctx context.Context) error {
	n := r.w.newNode()
	r.checker.ledger.setNode(n.Name, r.w.nodes[n.Name].models)
	_, err := r.c.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	return err
}

// cordon marks a node unschedulable (or not) and waits a moment for the
// schedulers to see it, so nothing binds there while it is drained.
func (r *runner) cordon(ctx context.Context, name string, off bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := r.c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = off
		_, err = r.c.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	sleepFor(ctx, 500*time.Millisecond)
	return err
}

// removeNode deletes a node, and with it, as a cluster's job operators
// would, every workload with a pod on it.
func (r *runner) removeNode(ctx context.Context, i, choice int) error {
	names := sortedKeys(r.w.nodes)
	if len(names) <= 2 {
		return nil
	}
	name := names[choice%len(names)]
	r.log("  %d: remove node %s and the workloads on it", i, name)
	if err := r.cordon(ctx, name, true); err != nil {
		return err
	}
	if err := r.drain(ctx, name); err != nil {
		return err
	}
	r.drained(ctx, name)
	delete(r.w.nodes, name)
	if err := ignoreNotFound(r.c.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})); err != nil {
		return err
	}
	return nil
}

// drain deletes every workload with a pod on node.
func (r *runner) drain(ctx context.Context, nodeName string) error {
	pods, err := r.c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: RunLabel + "=" + r.w.run, FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		if wl := r.w.owner(&pods.Items[i]); wl != nil && !wl.deleted {
			if err := r.deleteWork(ctx, wl); err != nil {
				return err
			}
		}
	}
	return nil
}

// drained waits until the pods drained from a node are gone, their grace
// periods over, as a drain does before a node is removed or re-sliced.
func (r *runner) drained(ctx context.Context, name string) {
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := r.c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: RunLabel + "=" + r.w.run, FieldSelector: "spec.nodeName=" + name})
		return err == nil && len(pods.Items) == 0, nil
	})
}

// reslice turns a whole-card H200 node into MIG slices or back, drained
// first (SPEC §3.6).
func (r *runner) reslice(ctx context.Context, i, choice int) error {
	var cands []string
	for _, name := range sortedKeys(r.w.nodes) {
		if _, ok := r.w.nodes[name].models[migRes]; ok || r.w.nodes[name].models[builder.GPUResource] == h200 {
			cands = append(cands, name)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	name := cands[choice%len(cands)]
	if err := r.cordon(ctx, name, true); err != nil {
		return err
	}
	if err := r.drain(ctx, name); err != nil {
		return err
	}
	r.drained(ctx, name)
	n, err := r.c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	nd := r.w.nodes[name]
	for _, l := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		if _, ok := nd.models[migRes]; ok {
			delete(l, migRes)
			l[builder.GPUResource] = *resourceQty(4)
		} else {
			delete(l, builder.GPUResource)
			l[migRes] = *resourceQty(7)
		}
	}
	if _, ok := nd.models[migRes]; ok {
		nd.models = map[corev1.ResourceName]string{builder.GPUResource: h200}
	} else {
		nd.models = map[corev1.ResourceName]string{migRes: h200MIG}
	}
	r.log("  %d: re-slice node %s to %v", i, name, nd.models)
	r.checker.ledger.setNode(name, nd.models)
	if _, err = r.c.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return r.cordon(ctx, name, false)
}
