package replay

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

// playEvents changes the cluster at the trace's times: nodes removed (their
// pods killed first, as a node that fails takes its pods with it), nodes
// added, a node's cards re-sliced (the pods using the old slicing killed).
func (c *cluster) playEvents(ctx context.Context, events []trace.Event, kube kubernetes.Interface) error {
	for i, e := range events {
		at := c.start.Add(time.Duration(float64(e.At.Duration) / c.k))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(at)):
		}
		var err error
		switch {
		case e.RemoveNode != "":
			c.killOn(e.RemoveNode, func(*podState) bool { return true })
			c.mu.Lock()
			delete(c.nodes, e.RemoveNode)
			c.mu.Unlock()
			err = kube.CoreV1().Nodes().Delete(ctx, e.RemoveNode, metav1.DeleteOptions{})
		case e.AddNodes != nil:
			err = c.addNodes(ctx, kube, *e.AddNodes)
		case e.Reslice != nil:
			err = c.reslice(ctx, kube, e.Reslice)
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("events[%d] at %s: %w", i, e.At.Duration, err)
		}
	}
	return nil
}

// killOn stops the pods on a node that match.
func (c *cluster) killOn(node string, match func(*podState) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for _, ps := range c.pods {
		if ps.node != node || ps.done || ps.stopped || !match(ps) {
			continue
		}
		ps.killed = true
		c.stopLocked(ps, now)
		c.kubelet.do(action{kind: kill, pod: podRef{namespace: ps.namespace, name: ps.name, uid: ps.uid}})
	}
}

// reslice gives a node its cards anew: its labels and allocatable change as
// the GPU operator changes them, and pods using cards the node no longer
// has are killed.
func (c *cluster) reslice(ctx context.Context, kube kubernetes.Interface, r *trace.Reslice) error {
	c.mu.Lock()
	n := c.nodes[r.Node]
	c.mu.Unlock()
	if n == nil {
		return fmt.Errorf("reslice: node %s is not in the cluster", r.Node)
	}
	g := resliced(n.group, r)
	fresh := nodeOf(g, r.Node)
	node, err := kube.CoreV1().Nodes().Get(ctx, r.Node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	node.Labels = fresh.Labels
	if node, err = kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return err
	}
	node.Status.Allocatable, node.Status.Capacity = fresh.Status.Allocatable, fresh.Status.Capacity
	if _, err = kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return err
	}
	detect := cardmodel.Detect(fresh)
	c.killOn(r.Node, func(ps *podState) bool { return !detect.Carries(ps.job.shape.resource) || !fits(detect, ps) })
	c.mu.Lock()
	c.nodes[r.Node] = &simNode{name: r.Node, group: g, detect: detect}
	c.mu.Unlock()
	return nil
}

// fits tells whether a pod's model is still one the node has.
func fits(n cardmodel.Node, ps *podState) bool {
	for _, card := range n.Cards {
		if card.Model == ps.model {
			return true
		}
	}
	return false
}
