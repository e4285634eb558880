package elasticquota

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

const stateKey fwk.StateKey = "PreFilter" + Name

// stateData is the pod's queue and what the queue uses, as this cycle sees
// it. AddPod and RemovePod adjust a clone during preemption simulation.
type stateData struct {
	queue          string
	request        quota.Resources
	nonPreemptible bool
	// class is the pod's preemptibility as its labels gave it when checked.
	class      workload.Preemptibility
	guarantee  quota.Resources
	capability quota.Resources
	allocated  quota.Resources
	// nonPreemptibleUse is the queue's non-preemptible use once the pod is
	// placed, without the pod itself: less the min member it pushes out to
	// elastic, if any.
	nonPreemptibleUse quota.Resources
	// recheck is set when PreFilter did not check the numbers (preemption
	// simulation) or AddPod or RemovePod changed them since: only then does
	// Filter, which runs for every node, check them.
	recheck bool
}

// Clone deep-copies what AddPod and RemovePod change.
func (s *stateData) Clone() fwk.StateData {
	c := *s
	c.allocated, c.nonPreemptibleUse = s.allocated.Clone(), s.nonPreemptibleUse.Clone()
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

// PreFilter finds the pod's queue and refuses the pod, before any node is
// looked at, if the queue does not exist, if the pod would take the queue
// past its capability, or if a non-preemptible pod would take the queue's
// non-preemptible use past its guarantee (SPEC §3.1, §3.5). The numbers are
// the state's, charged as Reserve charges them: a semi-preemptible gang's
// pod counts as non-preemptible only if it would rank among the gang's min.
//
// Until the informers have delivered every pod, node and Queue (just after
// a start or restart), it waits: counts still being rebuilt would let the
// queue go over its capability (SPEC §3.1).
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.state.Synced() {
		if err := p.state.WaitForSync(ctx); err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("waiting for Cardinal's state to sync: %w", err))
		}
	}
	c := p.state.Prospect(pod)
	if c.OwnerUnseen != "" {
		// Read again: the owner may have come since the facts were derived.
		if unseen := p.state.AwaitOwner(pod); unseen != "" {
			return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.OwnerUnseen{Owner: unseen})
		}
		c = p.state.Prospect(pod)
	}
	simulating := state.Simulating(cs)
	if c.Warning != "" && !simulating {
		p.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, "InvalidPreemptibility", "Scheduling", "%s", c.Warning)
	}
	u := p.state.QuotaUsage(c.Queue)
	if !u.Exists {
		if !simulating {
			p.state.WaitForRoom(pod, c.Queue, false) // woken when the Queue is created
		}
		if why := p.state.QueuesUnreadable(); why != "" {
			return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.QueueUnreadable{Queue: c.Queue, Why: why})
		}
		return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.NoQueue{Queue: c.Queue})
	}
	if c.Denied != nil {
		if !simulating {
			p.state.WaitForRoom(pod, c.Queue, false) // woken when the namespace or the Queue changes
		}
		return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, c.Denied)
	}
	s := &stateData{
		queue: c.Queue, request: c.Request, nonPreemptible: c.NonPreemptible, class: c.Preemptibility,
		guarantee: u.Guarantee, capability: u.Capability, allocated: u.Allocated, nonPreemptibleUse: u.NonPreemptible,
	}
	if c.Displaced != nil {
		s.nonPreemptibleUse.Sub(c.Displaced.Request)
	}
	if simulating {
		s.recheck = true
		cs.Write(stateKey, s)
		return nil, nil // Filter decides, on numbers preemption adjusts
	}
	st := s.check()
	// A refused pod's state may yet be cloned by a preemption dry run:
	// its Filter must then check again.
	s.recheck = st != nil
	cs.Write(stateKey, s)
	if st != nil {
		p.state.WaitForRoom(pod, c.Queue, false)
		state.MarkRefusedAtPreFilter(cs)
		return nil, st
	}
	return nil, nil
}

// check is the quota decision on this cycle's (possibly simulated) numbers.
func (s *stateData) check() *fwk.Status {
	if name, over := quota.Exceeded(s.allocated, s.request, s.capability); over {
		return refusal.Status(fwk.Unschedulable, refusal.QuotaExceeded{
			Queue: s.queue, Resource: string(name), Requested: s.request[name],
			WouldUse: s.allocated[name] + s.request[name], Capability: s.capability[name],
		})
	}
	if s.nonPreemptible {
		limit := guaranteeLimit(s.guarantee, s.capability)
		if name, over := quota.Exceeded(s.nonPreemptibleUse, s.request, limit); over {
			return refusal.Status(fwk.Unschedulable, refusal.GuaranteeExceeded{
				Queue: s.queue, Resource: string(name), Requested: s.request[name],
				WouldUse: s.nonPreemptibleUse[name] + s.request[name], Guarantee: limit[name],
			})
		}
	}
	return nil
}

// guaranteeLimit is what non-preemptible work may use: the guarantee, and 0
// of a resource the queue caps but does not guarantee.
func guaranteeLimit(guarantee, capability quota.Resources) quota.Resources {
	limit := guarantee.Clone()
	for name := range capability {
		if _, ok := limit[name]; !ok {
			limit[name] = 0
		}
	}
	return limit
}

// Filter repeats PreFilter's decision on the cycle state, which preemption
// simulation changes through AddPod and RemovePod, and keeps room that
// preemption made for another gang from the pod (claims.go). It writes no
// shared state, and reads only the node's kept room, without a lock.
func (p *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s.recheck {
		if st := s.check(); st != nil {
			return st
		}
	}
	if node := nodeInfo.Node(); node != nil {
		if claims := p.state.ClaimsOn(node.Name); len(claims) > 0 {
			return keptRoom(p.state.PreemptorKeyOf(pod), s.queue, quota.PodRequests(pod), nodeInfo, claims)
		}
	}
	return nil
}

// PreFilterExtensions keeps the cycle's queue numbers right while preemption
// simulates adding and removing pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod charges a simulated pod to the cycle's numbers if it is in the same queue.
func (p *Plugin) AddPod(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, added fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	return p.adjust(cs, added.GetPod(), quota.Resources.Add)
}

// RemovePod gives back a simulated victim's use if it is in the same queue.
func (p *Plugin) RemovePod(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, removed fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	return p.adjust(cs, removed.GetPod(), quota.Resources.Sub)
}

func (p *Plugin) adjust(cs fwk.CycleState, other *corev1.Pod, op func(r, b quota.Resources)) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	c, ok := p.state.ChargeOf(other)
	if !ok || c.Queue != s.queue {
		return nil
	}
	s.recheck = true
	op(s.allocated, c.Request)
	if c.NonPreemptible {
		op(s.nonPreemptibleUse, c.Request)
	}
	return nil
}

// Reserve charges the pod to its queue, by UID: its resources, and one unit
// per card of the model of the node it is placed on (SPEC §4.1). The gang
// plugin's Reserve records the same placement; whichever runs first does it.
//
// A pod whose queue, preemptibility or right to its queue changed since
// PreFilter checked it is refused, whichever plugin reserved it first, and
// tried again under its new labels: what is booked is what was checked.
func (p *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	var checked *state.Checked
	if s, err := getState(cs); err == nil {
		checked = &state.Checked{Queue: s.queue, Class: s.class}
	}
	return p.state.ReserveAsChecked(pod, nodeName, checked)
}

// Unreserve gives back exactly what Reserve charged, resources and cards.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.state.Unreserve(pod)
}
