package coscheduling

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// bindSlots bounds how many gang pods bind at once. A gang's min leaves
// Permit together: unbounded, a gang of 1000 sends 1000 binds, and as many
// events after them, in the same instant, more than kube-apiserver's
// priority level queues hold for one client. The overflow is answered 429
// and retried a second later, so the whole gang waits for its slowest bind.
// Through 64 slots the same binds queue here instead, and a gang of 1000
// binds as fast as kube-apiserver answers.
const bindSlots = 64

// slotKey marks, in a pod's cycle state, that the pod holds a bind slot.
const slotKey fwk.StateKey = "BindSlot" + Name

// slotHeld is a held slot; clones share it, so it is given back once.
type slotHeld struct{ given atomic.Bool }

func (h *slotHeld) Clone() fwk.StateData { return h }

// PreBindPreFlight says whether PreBind has work: only gang pods wait for a
// bind slot. Not in parallel with other PreBind plugins: running last, a
// pod takes its slot only once volumes and devices are ready, for its bind
// alone.
func (p *Plugin) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if _, ok := p.state.GangOf(pod); !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: false}, nil
}

// PreBind waits for a bind slot for a gang pod. A pod cancelled while it
// waits (preempted, or the scheduler stopping) gives up without one. A pod
// whose gang's attempt failed while it waited (a sibling gave up its
// place), or that was deleted, gives its slot back and does not bind.
func (p *Plugin) PreBind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	if _, ok := p.state.GangOf(pod); !ok {
		return nil
	}
	select {
	case p.binds <- struct{}{}:
	case <-ctx.Done():
		return fwk.AsStatus(context.Cause(ctx))
	}
	if !p.state.StillPlaced(pod) {
		<-p.binds
		return fwk.AsStatus(fmt.Errorf("pod %s/%s: its gang gave up the attempt it was placed in, or it was deleted, while it waited to bind", pod.Namespace, pod.Name))
	}
	cs.Write(slotKey, &slotHeld{})
	return nil
}

// PostBind gives the pod's bind slot back once it is bound.
func (p *Plugin) PostBind(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ string) {
	p.releaseSlot(cs)
}

// releaseSlot gives back the slot the pod holds, if it holds one.
func (p *Plugin) releaseSlot(cs fwk.CycleState) {
	if cs == nil {
		return
	}
	if d, err := cs.Read(slotKey); err == nil {
		if h, ok := d.(*slotHeld); ok && h.given.CompareAndSwap(false, true) {
			<-p.binds
		}
	}
}

// Bind binds the pod as kube-scheduler's DefaultBinder does, in one API
// call, and writes on it, in that call, how Cardinal placed it: its queue
// and whether it was placed as non-preemptible work (the annotation
// cardinal.dev/placed-as), so the books are kept as they were decided
// across relabels and restarts (SPEC §3.7), and the gang the grouper put
// it in, if it did. A pod the state has not placed
// is left to the next binder.
func (p *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	placedAs, ok := p.state.PlacedAs(pod)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{v1alpha1.PlacedAsAnnotation: placedAs}},
		Target: corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if name := p.state.GroupedInto(pod); name != "" {
		// The gang the grouper put it in (SPEC §7), written in the same
		// call: as the label scheduling.x-k8s.io/pod-group, which API
		// servers take from a Binding since 1.35, and as an annotation,
		// which every supported one takes.
		binding.Labels = map[string]string{schedv1alpha1.PodGroupLabel: name}
		binding.Annotations[v1alpha1.PodGroupAnnotation] = name
	}
	if c := p.handle.APICacher(); c != nil {
		onFinish, err := c.BindPod(binding)
		if err != nil {
			return fwk.AsStatus(err)
		}
		return fwk.AsStatus(c.WaitOnFinish(ctx, onFinish))
	}
	return fwk.AsStatus(schedutil.BindPod(ctx, p.handle.ClientSet(), binding))
}
