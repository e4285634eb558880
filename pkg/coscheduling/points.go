package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
)

// stateKey is where PreFilter leaves what the later extension points need.
const stateKey fwk.StateKey = "PreFilter" + Name

// stateData is this cycle's view of the pod's gang.
type stateData struct {
	gang    gang.Key
	inGang  bool
	elastic bool
}

// Clone returns the same data: it is never changed after PreFilter.
func (s *stateData) Clone() fwk.StateData { return s }

func getState(cs fwk.CycleState) (*stateData, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state: %w", stateKey, err)
	}
	s, ok := d.(*stateData)
	if !ok {
		return nil, fmt.Errorf("%+v cannot be converted to *coscheduling.stateData", d)
	}
	return s, nil
}

// PreEnqueue keeps a gang's pods out of the scheduling queue until its
// PodGroup exists and at least minMember of its pods do (SPEC §2.1).
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	k, ok := gang.Of(pod)
	if !ok {
		return nil
	}
	v := p.mgr.view(k)
	if !v.hasGroup {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"PodGroup %s not found: create it, or remove the label %s from the pod", k, PodGroupLabel))
	}
	if v.members < int(v.minMember) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"gang %s has %d of its minMember %d pods; waiting for %d more", k, v.members, v.minMember, int(v.minMember)-v.members))
	}
	return nil
}

// PreFilter lets a gang's pod be tried only when that cannot leave two gangs
// each holding part of what they need: a min member waits while another gang
// is being placed, an elastic pod waits while another gang still needs its
// min, and a gang that failed waits out its backoff (SPEC §2.2-§2.4).
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	k, ok := gang.Of(pod)
	if !ok {
		cs.Write(stateKey, &stateData{})
		return nil, nil
	}
	v := p.mgr.view(k)
	if wait := v.backoffUntil.Sub(p.clock.Now()); wait > 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"gang %s is backing off for %s after: %s", k, wait.Round(time.Second), v.lastFailure))
	}
	elastic := v.minMember > 0 && v.placed >= int(v.minMember)
	if reason := p.mgr.parkIfBlocked(pod, k, elastic); reason != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, reason)
	}
	// A gang starting an attempt must have room for its missing min somewhere
	// in the cluster's free resources before it reserves anything.
	if !elastic && v.waiting == 0 {
		need := int(v.minMember) - v.placed
		if room := roomFor(shapeOf(p.mgr.pendingList(k)), nodes, need); room < need {
			reason := fmt.Sprintf("its min needs %d more pods placed and free resources hold at most %d like them", need, room)
			p.failGang(ctx, k, reason)
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gang %s does not fit: %s", k, reason))
		}
	}
	cs.Write(stateKey, &stateData{gang: k, inGang: true, elastic: elastic})
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin's decision does not depend on
// which other pods are on a node.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a gang's pod fits on no node. An elastic pod simply
// waits for free capacity: it never preempts (SPEC §2.4). A min member makes
// its whole gang give back what its waiting members hold, at once, and back
// off, so it never sits on part of the cluster (SPEC §2.2).
func (p *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s, err := getState(cs)
	if err != nil || !s.inGang {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if s.elastic {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"elastic pod of gang %s waits for free capacity; elastic pods never preempt", s.gang))
	}
	v := p.mgr.view(s.gang)
	reason := fmt.Sprintf("pod %s fits on no node with %d of its min %d placed", pod.Name, v.placed, v.minMember)
	p.failGang(ctx, s.gang, reason)
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
		"gang %s cannot place its min now: %s; it gave back what it held and retries in %s", s.gang, reason, p.backoff))
}

// failGang rejects the gang's waiting members, records why on the PodGroup,
// and wakes the gang's pods when its backoff ends.
func (p *Plugin) failGang(ctx context.Context, k gang.Key, reason string) {
	waiting, wake := p.mgr.fail(k, reason)
	p.reject(k, waiting, reason)
	p.recordGangEvent(k, corev1.EventTypeWarning, "GangUnschedulable", fmt.Sprintf(
		"%s; gave back %d reserved pods, retrying in %s", reason, len(waiting), p.backoff))
	p.wakeAfterBackoff(ctx, k)
	p.activate(wake)
}

// reject rejects waiting members of gang k, so they release their nodes.
func (p *Plugin) reject(k gang.Key, uids []types.UID, reason string) {
	for _, uid := range uids {
		if wp := p.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, fmt.Sprintf("gang %s gives back its reservations: %s", k, reason))
		}
	}
}

// wakeAfterBackoff moves the gang's pending pods back to the active queue
// when its backoff has passed.
func (p *Plugin) wakeAfterBackoff(_ context.Context, k gang.Key) {
	p.clock.AfterFunc(p.backoff, func() {
		pods := p.mgr.pendingMembers(k)
		klog.V(5).InfoS("Gang backoff over, retrying its pods", "gang", k, "pods", len(pods))
		p.activate(pods)
	})
}

// Reserve counts the pod as placed for its gang.
func (p *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	if s, err := getState(cs); err == nil && s.inGang {
		p.activate(p.mgr.reserve(pod, s.gang))
	}
	return nil
}

// Unreserve mirrors Reserve. If losing this pod leaves its gang below min
// (a Permit timeout, a rejection, a failed bind), the gang's other waiting
// members are rejected too and the gang backs off.
func (p *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	s, err := getState(cs)
	if err != nil || !s.inGang {
		return
	}
	reason := fmt.Sprintf("pod %s gave up its reservation (Permit timeout, rejection or failed bind)", pod.Name)
	siblings, started, wake := p.mgr.unreserve(pod, s.gang, reason)
	p.reject(s.gang, siblings, reason)
	if started {
		p.recordGangEvent(s.gang, corev1.EventTypeWarning, "GangUnschedulable", fmt.Sprintf(
			"%s; gave back %d other reserved pods, retrying in %s", reason, len(siblings), p.backoff))
		p.wakeAfterBackoff(ctx, s.gang)
	}
	p.activate(wake)
}

// Permit holds a gang's min members until min of them are placed, then lets
// them all bind together. Elastic pods and pods without a gang pass at once.
func (p *Plugin) Permit(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	s, err := getState(cs)
	if err != nil || !s.inGang || s.elastic {
		return nil, 0
	}
	v := p.mgr.view(s.gang)
	if v.placed < int(v.minMember) {
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("gang %s has %d of its min %d placed", s.gang, v.placed, v.minMember)), p.permitWait
	}
	// Only this gang's reserved members can be waiting for it: look them up
	// by UID rather than walk every waiting pod (profiled: with many gangs
	// in flight the walk cost more than the rest of Permit).
	for _, uid := range p.mgr.reservedMembers(s.gang) {
		if wp := p.handle.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	return nil, 0
}

// IsElastic tells other plugins whether this cycle's pod is an elastic pod
// of its gang (placed beyond min), as decided at PreFilter.
func IsElastic(cs fwk.CycleState) bool {
	s, err := getState(cs)
	return err == nil && s.elastic
}
