package cardquota

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/requeue"
)

// EventsToRegister names what can give a refused pod cards: a placed pod
// that used cards deleted or finished (kube-scheduler reports a pod that
// finishes as deleted), a Queue created or changed, a node added or its
// labels or allocatable changed (a new model, a relabel, a MIG re-slice),
// or a PodGroup changed (its card-request fixed).
func (p *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return eventhandler.Readable(ctx, p.handle, []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.cardsFreed},
		{Event: fwk.ClusterEvent{Resource: eventhandler.QueueResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: requeue.OwnQueueChanged(p.state.QueueOf)},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}, QueueingHintFn: p.nodeHasCards},
		{Event: fwk.ClusterEvent{Resource: eventhandler.PodGroupResource, ActionType: fwk.Update}, QueueingHintFn: requeue.OwnPodGroupChanged(p.state.GangOf)},
	}), nil
}

// cardsFreed requeues a pod when a pod that used cards is gone or finished:
// one of its own queue, or of another queue when its queue has card quota
// left for it (then what it waits for is room on a node, which any queue's
// pod gives back).
func (p *Plugin) cardsFreed(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	other, _ := newObj.(*corev1.Pod)
	if other == nil {
		other, _ = oldObj.(*corev1.Pod)
	}
	if other == nil {
		return fwk.Queue, nil
	}
	if newObj != nil && other.Status.Phase != corev1.PodSucceeded && other.Status.Phase != corev1.PodFailed {
		return fwk.QueueSkip, nil
	}
	if len(cardmodel.CardRequests(other, p.state.IsCardResource)) == 0 {
		logger.V(5).Info("Freed pod used no cards: skip", "pod", klog.KObj(pod), "freed", klog.KObj(other))
		return fwk.QueueSkip, nil
	}
	if q1, q2 := p.state.QueueOf(pod), p.state.QueueOf(other); q1 != q2 && !p.quotaLeft(pod) {
		// What it waits for now is its queue's quota: the state wakes it
		// when that comes back (pkg/state waits.go), even by no event
		// registered here (a sibling moved to elastic, say).
		p.state.WaitForRoom(pod, q1, true)
		logger.V(5).Info("Pod of another queue freed cards, and the pod's queue has no quota left for it: skip", "pod", klog.KObj(pod), "freed", klog.KObj(other))
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// quotaLeft tells whether the pod's queue may have card quota left for
// it: under some model it names, for each card resource it requests. A pod
// that names no model may land on a node whose cards have none, where card
// quota does not hold it: that is never ruled out.
func (p *Plugin) quotaLeft(pod *corev1.Pod) bool {
	c := p.state.Prospect(pod)
	if c.CardNamesErr != nil || len(c.CardNames) == 0 {
		return true
	}
	s := p.newStateData(c)
	for _, m := range s.names {
		left := true
		for _, n := range c.CardRequests {
			if n > 0 && s.check(m, n) != nil {
				left = false
			}
		}
		if left {
			return true
		}
	}
	return false
}

// nodeHasCards requeues a pod when a node that carries cards, with a model
// or without, or any resource the pod requests as cards, is added or its
// labels or allocatable change (a new model, a relabel, a MIG re-slice,
// more cards); a node without them cannot give the pod room.
func (p *Plugin) nodeHasCards(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("want *v1.Node, got %T", newObj)
	}
	if d := cardmodel.Detect(node); len(d.Cards) > 0 || len(d.Unlabelled) > 0 {
		return fwk.Queue, nil
	}
	for r := range cardmodel.CardRequests(pod, p.state.IsCardResource) {
		if q, ok := node.Status.Allocatable[r]; ok && !q.IsZero() {
			return fwk.Queue, nil
		}
	}
	logger.V(5).Info("Node without cards changed: skip", "pod", klog.KObj(pod), "node", klog.KObj(node))
	return fwk.QueueSkip, nil
}
