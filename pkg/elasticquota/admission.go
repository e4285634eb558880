package elasticquota

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroups"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// PreEnqueue holds a gang back, so that none of its pods is even tried,
// while the rest of its min cannot fit its queue's capability, counting the
// queue's own elastic pods as free (they can be preempted for it), or, for a
// non-preemptible gang, its queue's guarantee (SPEC §3.4, §3.5). The
// PodGroup gets an event that says why, in numbers.
func (p *Plugin) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	k, ok := gang.Of(pod)
	if !ok || !p.cache.SyncedForAdmission(ctx) {
		return nil // PreFilter waits for the cache and checks each pod
	}
	pg, err := p.podGroup(k)
	if err != nil {
		return nil // the gang plugin says the PodGroup is missing
	}
	missing := int(pg.Spec.MinMember) - p.cache.GangPlaced(k)
	if missing <= 0 {
		p.forgetHeld(k)
		return nil
	}
	info, pre, _ := p.podInfo(pod)
	u := p.cache.Usage(info.Queue)
	if !u.Exists {
		return nil // PreFilter says the queue is missing, with an event
	}
	// What the rest of the min needs: the PodGroup's minResources when given
	// (scaled to the members still missing), else this pod's request for each.
	need := quota.Resources{}
	if len(pg.Spec.MinResources) > 0 && pg.Spec.MinMember > 0 {
		for name, v := range quota.FromList(pg.Spec.MinResources) {
			need[name] = v * int64(missing) / int64(pg.Spec.MinMember)
		}
	} else {
		for name, v := range info.Request {
			need[name] = v * int64(missing)
		}
	}
	msg := ""
	if name, over := quota.Exceeded(u.Allocated, need, u.Capability); over {
		free := u.Allocated.Clone()
		elastic, _ := p.cache.ElasticUsage(info.Queue, p.minOf)
		free.Sub(elastic)
		if name, over = quota.Exceeded(free, need, u.Capability); over {
			msg = fmt.Sprintf("gang %s is held: its min needs %d more pods; queue %s has insufficient %s quota: requested %s, would use %s, capability %s (its elastic pods counted as free)",
				k, missing, info.Queue, name, quota.Format(name, need[name]), quota.Format(name, free[name]+need[name]), quota.Format(name, u.Capability[name]))
		}
	}
	if msg == "" && info.NonPreemptible {
		if pre == workload.NonPreemptible || pre == workload.SemiPreemptible {
			limit := u.Guarantee.Clone()
			for name := range u.Capability {
				if _, ok := limit[name]; !ok {
					limit[name] = 0
				}
			}
			if name, over := quota.Exceeded(u.NonPreemptible, need, limit); over {
				msg = fmt.Sprintf("gang %s is held: it is %s and its min needs %d more pods; queue %s guarantees %s %s and non-preemptible pods would use %s",
					k, pre, missing, info.Queue, name, quota.Format(name, limit[name]), quota.Format(name, u.NonPreemptible[name]+need[name]))
			}
		}
	}
	if msg == "" {
		p.forgetHeld(k)
		return nil
	}
	p.noteHeld(k, msg)
	// A held pod is never tried, so no FailedScheduling tells its reason:
	// this does (repeats fold into one event series).
	p.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, "GangHeldByQueue", "Admission", "%s", msg)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

func (p *Plugin) podGroup(k gang.Key) (*schedv1alpha1.PodGroup, error) {
	ns, name := k.Split()
	return p.podGroups.PodGroups(ns).Get(name)
}

func (p *Plugin) minOf(k gang.Key) int32 {
	if pg, err := p.podGroup(k); err == nil {
		return pg.Spec.MinMember
	}
	return 0
}

// noteHeld marks the gang held and records an event on the PodGroup when
// the reason it is held changes.
func (p *Plugin) noteHeld(k gang.Key, msg string) {
	if !p.holds.Hold(k, Name, msg) {
		return
	}
	ns, name := k.Split()
	p.handle.EventRecorder().Eventf(podgroups.EventRef(p.podGroups, ns, name), nil, corev1.EventTypeWarning, "GangHeldByQueue", "Admission", "%s", msg)
}

func (p *Plugin) forgetHeld(k gang.Key) { p.holds.Release(k, Name) }
