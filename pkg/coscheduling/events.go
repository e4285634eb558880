package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroups"
)

// EventsToRegister names the cluster events that can let a pod this plugin
// turned away be tried again: a new pod or a new or changed PodGroup of its
// own gang. Pods parked behind another gang, and gangs backing off, are woken
// by the plugin itself through the scheduler's Activate.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: sameGangPod},
		{Event: fwk.ClusterEvent{Resource: eventhandler.PodGroupResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: sameGangPodGroup},
	}, nil
}

func sameGangPod(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("want *v1.Pod, got %T", newObj)
	}
	k, ok := gang.Of(pod)
	if k2, ok2 := gang.Of(added); ok && ok2 && k == k2 {
		return fwk.Queue, nil
	}
	logger.V(5).Info("Pod added in another gang: skip", "pod", klog.KObj(pod), "added", klog.KObj(added))
	return fwk.QueueSkip, nil
}

func sameGangPodGroup(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	pg, ok := newObj.(*schedv1alpha1.PodGroup)
	if !ok {
		// Custom resources may arrive unstructured; requeue rather than guess.
		return fwk.Queue, nil
	}
	if k, ok := gang.Of(pod); ok && k == gang.KeyOf(pg) {
		return fwk.Queue, nil
	}
	logger.V(5).Info("PodGroup of another gang changed: skip", "pod", klog.KObj(pod), "podGroup", klog.KObj(pg))
	return fwk.QueueSkip, nil
}

// recordGangEvent leaves an event on the gang's PodGroup.
func (p *Plugin) recordGangEvent(k gang.Key, eventType, reason, note string) {
	ns, name := k.Split()
	p.handle.EventRecorder().Eventf(podgroups.EventRef(p.podGroups, ns, name), nil, eventType, reason, "Scheduling", "%s", note)
}
