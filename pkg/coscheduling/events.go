package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/requeue"
)

// EventsToRegister names the cluster events that can let a pod this plugin
// turned away be tried again. Pods parked behind another gang, and gangs
// backing off, are woken by the state itself (through its outbox).
func (p *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return eventhandler.Readable(ctx, p.handle, []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.Delete | fwk.UpdatePodLabel}, QueueingHintFn: p.gangMemberChanged},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: p.victimGone},
		// Not Add: a gang's pods wait for its PodGroup only while it is
		// not admissible, and the state wakes them when it becomes so
		// (refreshGangLocked). kube-scheduler would otherwise ask every
		// waiting pod about every PodGroup made, under its queue's lock:
		// O(gangs × waiting pods) when the grouper makes a PodGroup for
		// each of many workloads at once.
		{Event: fwk.ClusterEvent{Resource: eventhandler.PodGroupResource, ActionType: fwk.Update}, QueueingHintFn: requeue.OwnPodGroupChanged(p.state.GangOf)},
	}), nil
}

// gangMemberChanged requeues a pod when its gang gains a member (it may
// now have minMember pods), loses a pod that named another scheduler, or a
// member's labels change (its queue: a gang split across queues may be
// whole again).
func (p *Plugin) gangMemberChanged(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	other, _ := newObj.(*corev1.Pod)
	deleted := other == nil
	if deleted {
		other, _ = oldObj.(*corev1.Pod)
	}
	if other == nil {
		return fwk.Queue, fmt.Errorf("want *v1.Pod, got %T", oldObj)
	}
	k, ok := p.state.GangOf(pod)
	inGang := func(obj any) bool {
		o, _ := obj.(*corev1.Pod)
		if o == nil {
			return false
		}
		k2, ok2 := p.state.GangOf(o)
		return ok2 && k2 == k
	}
	// An update counts if the pod was in the gang before it or is after
	// (a pod of another scheduler relabelled out of it mends a split).
	if !ok || (!inGang(newObj) && !inGang(oldObj)) {
		logger.V(5).Info("Pod of another gang changed: skip", "pod", klog.KObj(pod), "other", klog.KObj(other))
		return fwk.QueueSkip, nil
	}
	if deleted && other.Spec.SchedulerName == pod.Spec.SchedulerName {
		logger.V(5).Info("A member of the gang was deleted: its gang has fewer pods, skip", "pod", klog.KObj(pod), "deleted", klog.KObj(other))
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// victimGone requeues a pod of a gang whose preemption is under way when a
// placed pod is deleted: the state wakes the members when it sees the last
// victim go, but kube-scheduler's own cache may see it later, and a member
// tried in between finds no room and waits for the room it was promised.
// This is the event that tells it the room is there now.
func (p *Plugin) victimGone(logger klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	gone, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("want *v1.Pod, got %T", oldObj)
	}
	if gone.Spec.NodeName == "" || !p.state.PreemptionUnderWay(pod) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A placed pod was deleted while the pod's preemption is under way: queue", "pod", klog.KObj(pod), "deleted", klog.KObj(gone))
	return fwk.Queue, nil
}
