package cardquota

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/state"
)

// PreEnqueue holds a gang back, so that none of its pods is even tried,
// while the cards the rest of its min needs cannot fit its queue's card
// quota, counting as free what the gang may preempt inside its queue (its
// elastic pods, and preemptible work of lower priority: SPEC §1.2, §3.4,
// §5.4).
// What the gang needs is its PodGroup's card-request annotation (or
// volcano.sh/card.request), scaled to the members still missing; without
// one, this pod's cards for each missing member. The PodGroup gets an event
// that says why, in cards.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	v, missing, st := p.state.MinToAdmit(pod, Name)
	if st != nil || missing == 0 {
		return st
	}
	k := v.Key
	c := p.state.Candidate(pod)
	if c.Denied != "" {
		return nil // CardinalQueue's PreFilter refuses it, with an event
	}
	cards := p.state.Cards(c.Queue)
	var msg string
	reqs, err := gangRequests(c, v.Group, int64(missing), cards)
	if err != nil {
		msg = fmt.Sprintf("gang %s is held: %v", k, err)
	} else if short := shortfall(c.Queue, reqs, cards, nil); short != "" {
		// What the gang may preempt in its queue counts as free: it gives
		// way to the gang's min (SPEC §5.4). Non-preemptible work never
		// does: if the min is short even without it, nothing is scanned.
		all, freed := make(map[string]int64, len(cards)), make(map[string]int64, len(cards))
		for m, u := range cards {
			all[m], freed[m] = u.Allocated, u.Allocated-u.NonPreemptible
		}
		note := state.MinAlone
		if short = shortfall(c.Queue, reqs, cards, all); short == "" {
			note = state.AllButNonPreemptible
			if short = shortfall(c.Queue, reqs, cards, freed); short == "" {
				f := p.state.FreeableInQueue(pod, c.Queue)
				note, short = f.Note, shortfall(c.Queue, reqs, cards, f.Cards)
			}
		}
		if short != "" {
			msg = fmt.Sprintf("gang %s is held: its min needs %d more pods; %s (%s)", k, missing, short, note)
		}
	}
	if msg == "" && err == nil && c.NonPreemptible {
		// Non-preemptible work may use only the guarantee (SPEC §3.5):
		// preemption frees none of it for a non-preemptible min.
		msg = guaranteeShortfall(k, c, missing, reqs, cards)
	}
	if msg == "" {
		p.state.Release(k, Name)
		return nil
	}
	if p.state.Hold(pod, k, Name, msg, c.Queue, true) {
		p.handle.EventRecorder().Eventf(p.state.PodGroupRef(k), nil, corev1.EventTypeWarning, "GangHeldByCardQuota", "Admission", "%s", msg)
	}
	// A held pod is never tried, so no FailedScheduling tells its reason:
	// this does (repeats fold into one event series).
	p.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, "GangHeldByCardQuota", "Admission", "%s", msg)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

// gangRequests is what the rest of a gang's min needs in cards.
func gangRequests(c state.Candidate, pg *schedv1alpha1.PodGroup, missing int64, cards map[string]state.CardUsage) ([]cardmodel.Request, error) {
	if v, from, ok := cardmodel.Annotation(pg.Annotations, v1alpha1.CardRequestAnnotation, v1alpha1.VolcanoCardRequestAnnotation); ok {
		reqs, err := cardmodel.ParseRequest(v)
		if err != nil {
			return nil, fmt.Errorf("PodGroup %s/%s: annotation %s is invalid: %v", pg.Namespace, pg.Name, from, err)
		}
		if minMember := int64(pg.Spec.MinMember); minMember > 0 {
			for i := range reqs {
				reqs[i].Count = (reqs[i].Count*missing + minMember - 1) / minMember
			}
		}
		return reqs, nil
	}
	if c.CardNamesErr != nil {
		return nil, nil // PreFilter refuses the pod and says why
	}
	var reqs []cardmodel.Request
	for r, n := range c.CardRequests {
		models := c.CardNames
		if len(models) == 0 {
			// Any model the queue lists that this resource is. A queue that
			// lists none may still use cards without a model (SPEC §1.4):
			// Filter decides those.
			for m, u := range cards {
				if u.Listed && cardmodel.Matches(m, r) {
					models = append(models, m)
				}
			}
			sort.Strings(models)
		}
		if len(models) > 0 {
			reqs = append(reqs, cardmodel.Request{Models: models, Count: n * missing})
		}
	}
	return reqs, nil
}

// shortfall says, per SPEC §4.6, the first request that does not fit the
// queue's card quota, its alternatives taken in order and freed counted as
// available; "" when all fit.
func shortfall(queue string, reqs []cardmodel.Request, cards map[string]state.CardUsage, freed map[string]int64) string {
	r, short := firstShort(reqs, cards, func(u state.CardUsage, m string) int64 { return u.Capability - u.Allocated + freed[m] })
	if !short {
		return ""
	}
	var used, capability int64
	for _, m := range r.Models {
		used += cards[m].Allocated - freed[m]
		capability += cards[m].Capability
	}
	return fmt.Sprintf("queue %s has insufficient %s quota: requested %d, would use %d, capability %d",
		queue, strings.Join(r.Models, "|"), r.Count, used+r.Count, capability)
}

// guaranteeShortfall says, for a gang whose min would be charged as
// non-preemptible (SPEC §3.5), the first request that does not fit the
// queue's guarantee of its models less their non-preemptible use; "" when
// all fit.
func guaranteeShortfall(k gang.Key, c state.Candidate, missing int, reqs []cardmodel.Request, cards map[string]state.CardUsage) string {
	r, short := firstShort(reqs, cards, func(u state.CardUsage, _ string) int64 { return u.Guarantee - u.NonPreemptible })
	if !short {
		return ""
	}
	var used, guarantee int64
	for _, m := range r.Models {
		used += cards[m].NonPreemptible
		guarantee += cards[m].Guarantee
	}
	return fmt.Sprintf("gang %s is held: it is %s and its min needs %d more pods; queue %s guarantees %s %d and non-preemptible pods would use %d",
		k, c.Preemptibility, missing, c.Queue, strings.Join(r.Models, "|"), guarantee, used+r.Count)
}

// firstShort finds the first request that the room of the queue's listed
// models (room of each, at least 0) cannot hold, its alternatives taken in
// order and the room they take gone for later requests.
func firstShort(reqs []cardmodel.Request, cards map[string]state.CardUsage, roomOf func(state.CardUsage, string) int64) (cardmodel.Request, bool) {
	room := map[string]int64{}
	for m, u := range cards {
		if u.Listed {
			room[m] = max(0, roomOf(u, m))
		}
	}
	for _, r := range reqs {
		need := r.Count
		for _, m := range r.Models {
			take := min(need, room[m])
			room[m] -= take
			need -= take
		}
		if need > 0 {
			return r, true
		}
	}
	return cardmodel.Request{}, false
}
