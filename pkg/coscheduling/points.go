package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
)

// stateKey is where PreFilter tells PostFilter whether it let the pod be tried.
const stateKey fwk.StateKey = "PreFilter" + Name

// stateData records PreFilter's answer for a gang's pod.
type stateData struct {
	// turnedAway: PreFilter itself made the pod wait (parked behind another
	// gang, backing off, gang incomplete): that is no failure of the gang.
	turnedAway bool
}

// Clone returns the same data: it is never changed after PreFilter.
func (s *stateData) Clone() fwk.StateData { return s }

// PreEnqueue keeps a gang's pods out of the scheduling queue until its
// PodGroup exists and at least minMember of its pods do, and holds a gang
// whose pods cannot be admitted as one (SPEC §2.1, §2.5).
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	return p.state.AdmitGang(pod)
}

// PreFilter lets a gang's pod be tried only when that cannot leave two gangs
// each holding part of what they need: a min member waits while another gang
// is being placed, an elastic pod waits while another gang still needs its
// min, and a gang that failed waits out its backoff (SPEC §2.2-§2.4). A gang
// starting an attempt must have room for its missing min somewhere in the
// cluster's free resources before it reserves anything.
func (p *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if state.Simulating(cs) {
		// A preemption plan tries where the gang's members would go: the
		// gang's own gates were passed by the pod that preempts.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	start, st := p.state.TryStart(pod)
	cs.Write(stateKey, &stateData{turnedAway: st != nil})
	if st != nil {
		state.MarkRefusedAtPreFilter(cs)
	}
	if st != nil || start.Missing == 0 {
		return nil, st
	}
	// Not a turning away: preemption may still make room (PostFilter), and
	// if it cannot, PostFilter fails the gang.
	if room := roomFor(shapeOf(start.Pending), nodes, start.Missing); room < start.Missing {
		state.MarkRefusedAtPreFilter(cs)
		return nil, refusal.Status(fwk.Unschedulable, refusal.GangDoesNotFit{Gang: string(start.Gang), Missing: start.Missing, Room: room})
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin's decision does not depend on
// which other pods are on a node.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a gang's pod fits on no node. A pod this plugin's
// PreFilter made wait (parked, backing off) has nothing more to do. An
// elastic pod simply waits for free capacity: it never preempts (SPEC
// §2.4). A min member makes its whole gang give back what its waiting
// members hold, at once, and back off, so it never sits on part of the
// cluster (SPEC §2.2), once preemption has tried to make room for it. The
// gang's numbers are read from the state: another plugin's PreFilter may
// have refused the pod before this plugin's ran.
func (p *Plugin) PostFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if st := p.state.AfterNarrowingMiss(cs, pod, statuses); st != nil {
		return nil, st // only part of the nodes were tried
	}
	k, ok := p.state.GangOf(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if d, err := cs.Read(stateKey); err == nil {
		if s, ok := d.(*stateData); ok && s.turnedAway {
			return nil, fwk.NewStatus(fwk.Unschedulable)
		}
	}
	v, ok := p.state.GangStatus(k)
	if !ok || v.Group == nil {
		return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.NoPodGroup{Gang: string(k)})
	}
	if v.Placed >= int(v.Group.Spec.MinMember) {
		return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.ElasticNoRoom{Gang: string(k)})
	}
	reason := fmt.Sprintf("pod %s cannot be placed now (its events say why) with %d of its min %d placed", pod.Name, v.Placed, v.Group.Spec.MinMember)
	if p.state.PreemptionEnabled() && !state.PreemptionTried(cs) {
		// CardinalPreemption's PostFilter runs next: the gang gives up only
		// if it cannot make room.
		state.DeferGangFailure(cs, k, reason)
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s cannot place its min now: %s", k, reason))
	}
	p.state.FailGang(k, reason)
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
		"gang %s cannot place its min now: %s; it gave back what it held and retries in %s", k, reason, p.state.Settings().GangBackoff))
}

// Reserve records the pod as placed: charged to its queue and counted for
// its gang (pkg/state; the queue plugin's Reserve does the same, and
// whichever runs first places the pod).
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	return p.state.Reserve(pod, nodeName)
}

// Unreserve mirrors Reserve. If losing this pod leaves its gang's attempt
// below min (a Permit timeout, a rejection, a failed bind), the gang's other
// waiting members are rejected too and the gang backs off. The pod's bind
// slot is given back after that: a sibling that takes this slot finds the
// attempt already failed and does not bind. (One that takes a slot freed
// elsewhere between this pod's failed bind and its Unreserve still binds,
// as members already holding slots do.)
func (p *Plugin) Unreserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	p.state.Unreserve(pod)
	p.releaseSlot(cs)
}

// Permit holds a gang's min members until min of them are placed, then lets
// them all bind together. Elastic pods and pods without a gang pass at once.
func (p *Plugin) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	wait, timeout, allow, msg := p.state.Permit(pod)
	if wait {
		// A PodGroup may shorten its wait, not lengthen it past the
		// operator's: gangs are assembled one at a time, so a longer wait
		// would hold every other gang back as long.
		if timeout == 0 || timeout > p.permitWait {
			timeout = p.permitWait
		}
		return fwk.NewStatus(fwk.Wait, msg), timeout
	}
	// Only this gang's reserved members can be waiting for it: look them up
	// by UID rather than walk every waiting pod.
	for _, uid := range allow {
		if wp := p.handle.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	return nil, 0
}
