package elasticquota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/requeue"
)

// EventsToRegister names what can give a refused pod room in its queue: a
// placed pod of the same queue deleted or finished (kube-scheduler reports
// a pod that finishes as deleted), its Queue created or its quota changed,
// or, for a held gang, its PodGroup changed in what admits it.
func (p *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return eventhandler.Readable(ctx, p.handle, []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.sameQueuePodFreed},
		{Event: fwk.ClusterEvent{Resource: eventhandler.QueueResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: requeue.OwnQueueChanged(p.state.QueueOf)},
		{Event: fwk.ClusterEvent{Resource: eventhandler.PodGroupResource, ActionType: fwk.Update}, QueueingHintFn: requeue.OwnPodGroupChanged(p.state.GangOf)},
	}), nil
}

// sameQueuePodFreed requeues a pod when a placed pod of its queue is gone or finished.
func (p *Plugin) sameQueuePodFreed(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
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
	if q1, q2 := p.state.QueueOf(pod), p.state.QueueOf(other); q1 != q2 {
		logger.V(5).Info("Pod of another queue freed: skip", "pod", klog.KObj(pod), "freed", klog.KObj(other))
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
