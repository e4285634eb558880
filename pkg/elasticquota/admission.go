package elasticquota

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

// PreEnqueue holds a gang back, so that none of its pods is even tried,
// while the rest of its min cannot fit its queue's capability, counting as
// free what the gang may preempt inside its queue (its elastic pods, and
// preemptible work of lower priority, SPEC §5.4), or, for a non-preemptible
// or semi-preemptible gang, its queue's guarantee (SPEC §3.4, §3.5). The
// PodGroup gets an event that says why, in numbers.
//
// It runs under the scheduling queue's lock: it reads the state, and a hold
// it records wakes other pods only later, through the state's outbox.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	v, missing, st := p.state.MinToAdmit(pod, Name)
	if st != nil || missing == 0 {
		return st
	}
	k := v.Key
	c := p.state.Candidate(pod)
	u := p.state.QuotaUsage(c.Queue)
	if !u.Exists || c.Denied != "" {
		return nil // PreFilter says the queue is missing or not the namespace's, with an event
	}
	msg := heldReason(k, v, missing, c, u, func() state.Freeable { return p.state.FreeableInQueue(pod, c.Queue) })
	if msg == "" {
		p.state.Release(k, Name)
		return nil
	}
	if p.state.Hold(pod, k, Name, msg, c.Queue, false) {
		p.handle.EventRecorder().Eventf(p.state.PodGroupRef(k), nil, corev1.EventTypeWarning, "GangHeldByQueue", "Admission", "%s", msg)
	}
	// A held pod is never tried, so no FailedScheduling tells its reason:
	// this does (repeats fold into one event series).
	p.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, "GangHeldByQueue", "Admission", "%s", msg)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

// heldReason says why the rest of a gang's min cannot fit its queue, or "".
// What the rest needs is the PodGroup's minResources when given (scaled to
// the members still missing), else this pod's request for each. freeable is
// asked only when the queue's capability is short without it.
func heldReason(k gang.Key, v state.GangView, missing int, c state.Candidate, u state.Usage, freeable func() state.Freeable) string {
	need := quota.Resources{}
	if min := v.Group.Spec.MinMember; len(v.Group.Spec.MinResources) > 0 && min > 0 {
		for name, n := range quota.FromList(v.Group.Spec.MinResources) {
			need[name] = n * int64(missing) / int64(min)
		}
	} else {
		for name, n := range c.Request {
			need[name] = n * int64(missing)
		}
	}
	if _, over := quota.Exceeded(u.Allocated, need, u.Capability); over {
		// What the gang may preempt in its queue counts as free: it gives
		// way to the gang's min (SPEC §5.4). Non-preemptible work never
		// does: if the min is short even without it, nothing is scanned.
		left, note := u.NonPreemptible, state.AllButNonPreemptible
		if _, over := quota.Exceeded(quota.Resources{}, need, u.Capability); over {
			left, note = quota.Resources{}, state.MinAlone
		} else if _, over := quota.Exceeded(left, need, u.Capability); !over {
			f := freeable()
			left = u.Allocated.Clone()
			left.Sub(f.Request)
			note = f.Note
		}
		if name, over := quota.Exceeded(left, need, u.Capability); over {
			return fmt.Sprintf("gang %s is held: its min needs %d more pods; queue %s has insufficient %s quota: requested %s, would use %s, capability %s (%s)",
				k, missing, c.Queue, name, quota.Format(name, need[name]), quota.Format(name, left[name]+need[name]), quota.Format(name, u.Capability[name]), note)
		}
	}
	if c.Preemptibility == workload.NonPreemptible || c.Preemptibility == workload.SemiPreemptible {
		limit := guaranteeLimit(u.Guarantee, u.Capability)
		if name, over := quota.Exceeded(u.NonPreemptible, need, limit); over {
			return fmt.Sprintf("gang %s is held: it is %s and its min needs %d more pods; queue %s guarantees %s %s and non-preemptible pods would use %s",
				k, c.Preemptibility, missing, c.Queue, name, quota.Format(name, limit[name]), quota.Format(name, u.NonPreemptible[name]+need[name]))
		}
	}
	return ""
}
