package elasticquota

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/queuecache"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// PodGroupLabel is the label with which pods join a PodGroup.
const PodGroupLabel = schedv1alpha1.PodGroupLabel

const stateKey fwk.StateKey = "PreFilter" + Name

// stateData is the pod's queue and what the queue uses, as this cycle sees
// it. AddPod and RemovePod adjust a clone during preemption simulation.
type stateData struct {
	info           queuecache.PodInfo
	guarantee      quota.Resources
	capability     quota.Resources
	allocated      quota.Resources
	nonPreemptible quota.Resources
}

// Clone deep-copies what AddPod and RemovePod change.
func (s *stateData) Clone() fwk.StateData {
	c := *s
	c.allocated, c.nonPreemptible = s.allocated.Clone(), s.nonPreemptible.Clone()
	return &c
}

func getState(cs fwk.CycleState) (*stateData, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state: %w", stateKey, err)
	}
	s, ok := d.(*stateData)
	if !ok {
		return nil, fmt.Errorf("%+v cannot be converted to *elasticquota.stateData", d)
	}
	return s, nil
}

// PodInfoOf is what this cycle's PreFilter found of the pod: its queue,
// whether it is charged as non-preemptible, and its gang. The card quota
// plugin reads it so that both plugins judge the pod alike.
func PodInfoOf(cs fwk.CycleState) (queuecache.PodInfo, error) {
	s, err := getState(cs)
	if err != nil {
		return queuecache.PodInfo{}, fmt.Errorf("%w: enable %s before the plugins that read it", err, Name)
	}
	return s.info, nil
}

// PreFilter finds the pod's queue and refuses the pod, before any node is
// looked at, if the queue does not exist, if the pod would take the queue
// past its capability, or if a non-preemptible pod would take the queue's
// non-preemptible use past its guarantee (SPEC §3.1, §3.5).
//
// Until the informers have delivered every pod, node and Queue (just after
// a start or restart), it waits: counts still being rebuilt would let the
// queue go over its capability (SPEC §3.1).
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if err := p.cache.WaitForSync(ctx); err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("waiting for the queue cache to sync: %w", err))
	}
	info, pre, warning := p.podInfo(pod)
	if warning != "" {
		p.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, "InvalidPreemptibility", "Scheduling", "%s", warning)
	}
	if pre == workload.SemiPreemptible && coscheduling.IsElastic(cs) {
		// Elastic pods of a semi-preemptible gang are preemptible (SPEC §5.2).
		info.NonPreemptible = false
	}
	u := p.cache.Usage(info.Queue)
	if !u.Exists {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"queue %s does not exist: create it, or set the label cardinal.dev/queue on the pod, its PodGroup or its namespace to an existing queue", info.Queue))
	}
	s := &stateData{info: info, guarantee: u.Guarantee, capability: u.Capability, allocated: u.Allocated, nonPreemptible: u.NonPreemptible}
	cs.Write(stateKey, s)
	if st := s.check(); st != nil {
		return nil, st
	}
	return nil, nil
}

// check is the quota decision on this cycle's (possibly simulated) numbers.
func (s *stateData) check() *fwk.Status {
	if name, over := quota.Exceeded(s.allocated, s.info.Request, s.capability); over {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"queue %s has insufficient %s quota: requested %s, would use %s, capability %s",
			s.info.Queue, name, quota.Format(name, s.info.Request[name]),
			quota.Format(name, s.allocated[name]+s.info.Request[name]), quota.Format(name, s.capability[name])))
	}
	if s.info.NonPreemptible {
		// A resource the queue tracks but does not guarantee is guaranteed 0.
		limit := s.guarantee.Clone()
		for name := range s.capability {
			if _, ok := limit[name]; !ok {
				limit[name] = 0
			}
		}
		if name, over := quota.Exceeded(s.nonPreemptible, s.info.Request, limit); over {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
				"queue %s: non-preemptible pods may use only its guarantee of %s: requested %s, would use %s, guarantee %s",
				s.info.Queue, name, quota.Format(name, s.info.Request[name]),
				quota.Format(name, s.nonPreemptible[name]+s.info.Request[name]), quota.Format(name, limit[name])))
		}
	}
	return nil
}

// Filter repeats PreFilter's decision on the cycle state, which preemption
// simulation changes through AddPod and RemovePod. It reads no shared state.
func (p *Plugin) Filter(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ fwk.NodeInfo) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	return s.check()
}

// PreFilterExtensions keeps the cycle's queue numbers right while preemption
// simulates adding and removing pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod charges a simulated pod to the cycle's numbers if it is in the same queue.
func (p *Plugin) AddPod(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, added fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	return p.adjust(cs, added.GetPod(), func(r, b quota.Resources) { r.Add(b) })
}

// RemovePod gives back a simulated victim's use if it is in the same queue.
func (p *Plugin) RemovePod(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, removed fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	return p.adjust(cs, removed.GetPod(), func(r, b quota.Resources) { r.Sub(b) })
}

func (p *Plugin) adjust(cs fwk.CycleState, other *corev1.Pod, op func(r, b quota.Resources)) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	info, _, _, ok := p.cache.Pod(other.UID)
	if !ok || info.Queue != s.info.Queue {
		return nil
	}
	op(s.allocated, info.Request)
	if info.NonPreemptible {
		op(s.nonPreemptible, info.Request)
	}
	return nil
}

// Reserve charges the pod to its queue, by UID: its resources, and one unit
// per card of the models of the node it is placed on (SPEC §4.1), which
// the card quota plugin's Filter checked against the same cache.
func (p *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	p.cache.AddPodIfAbsent(pod, s.info, nodeName)
	return nil
}

// Unreserve gives back exactly what Reserve charged, resources and cards.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.cache.Unplace(pod.UID)
}
