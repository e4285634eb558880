package elasticquota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

// PreEnqueue holds a gang back, so that none of its pods is even tried,
// while the rest of its min cannot fit its queue's capability, counting as
// free what the gang may preempt inside its queue (its elastic pods, and
// preemptible work of lower priority, SPEC §5.4), or, for a non-preemptible
// or semi-preemptible gang, its queue's guarantee (SPEC §3.4, §3.5). The
// skeleton is the state's (AdmitToQuota); this plugin says what is short.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	return p.state.AdmitToQuota(pod, state.QuotaAdmission{
		Holder: Name, EventReason: "GangHeldByQueue", Check: p.held,
	})
}

// held says why the rest of a gang's min cannot fit its queue's resource
// quota. A queue that does not exist is not judged: PreFilter says so.
func (p *Plugin) held(pod *corev1.Pod, v state.GangStatus, missing int, c state.PodView) (refusal.Refusal, bool) {
	u := p.state.QuotaUsage(c.Queue)
	if !u.Exists {
		return nil, false
	}
	return heldReason(v, missing, c, u, func() state.Freeable { return p.state.FreeableInQueue(pod, c.Queue) }), true
}

// heldReason says why the rest of a gang's min cannot fit its queue, or
// nil. What the rest needs is the PodGroup's minResources when given (its
// share for the members still missing, state.ShareOfMin), else this pod's
// request for each. freeable is asked only when the queue's capability is
// short without it.
func heldReason(v state.GangStatus, missing int, c state.PodView, u state.Usage, freeable func() state.Freeable) refusal.Refusal {
	need := quota.Resources{}
	if min := v.Group.Spec.MinMember; len(v.Group.Spec.MinResources) > 0 && min > 0 {
		for name, n := range quota.FromList(v.Group.Spec.MinResources) {
			need[name] = state.ShareOfMin(n, missing, int(min))
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
			return refusal.GangOverQuota{Gang: string(v.Key), Missing: missing, Note: note, Quota: refusal.QuotaExceeded{
				Queue: c.Queue, Resource: string(name), Requested: need[name], WouldUse: left[name] + need[name], Capability: u.Capability[name],
			}}
		}
	}
	if c.Preemptibility == workload.NonPreemptible || c.Preemptibility == workload.SemiPreemptible {
		limit := guaranteeLimit(u.Guarantee, u.Capability)
		if name, over := quota.Exceeded(u.NonPreemptible, need, limit); over {
			return refusal.GangOverGuarantee{
				Gang: string(v.Key), Preemptibility: string(c.Preemptibility), Missing: missing,
				Queue: c.Queue, Resource: string(name), Guarantee: limit[name], WouldUse: u.NonPreemptible[name] + need[name],
			}
		}
	}
	return nil
}
