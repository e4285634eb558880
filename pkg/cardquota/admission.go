package cardquota

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
)

// PreEnqueue holds a gang back, so that none of its pods is even tried,
// while the cards the rest of its min needs cannot fit its queue's card
// quota, counting as free what the gang may preempt inside its queue (its
// elastic pods, and preemptible work of lower priority: SPEC §1.2, §3.4,
// §5.4), or, for a gang whose min is charged as non-preemptible (a
// non-preemptible or semi-preemptible gang), its queue's guarantee (SPEC
// §3.5).
// The skeleton is the state's (AdmitToQuota); this plugin says what is
// short, in cards.
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	return p.state.AdmitToQuota(pod, state.QuotaAdmission{
		Holder: Name, EventReason: "GangHeldByCardQuota", UsesCards: true, Check: p.held,
	})
}

// held says why the cards the rest of a gang's min needs do not fit its
// queue's card quota. What the gang needs is its PodGroup's card-request
// annotation (or volcano.sh/card.request), its share for the members still
// missing (state.ShareOfMin); without one, this pod's cards for each
// missing member.
func (p *Plugin) held(pod *corev1.Pod, v state.GangStatus, missing int, c state.PodView) (refusal.Refusal, bool) {
	cards := p.state.Cards(c.Queue)
	reqs, invalid := gangRequests(c, v.Group, missing, cards)
	if invalid != nil {
		return refusal.GangRequestInvalid{Gang: string(v.Key), Invalid: *invalid}, true
	}
	if short := shortfall(c.Queue, reqs, cards, nil); short != nil {
		// What the gang may preempt in its queue counts as free: it gives
		// way to the gang's min (SPEC §5.4). Non-preemptible work never
		// does: if the min is short even without it, nothing is scanned.
		all, freed := make(map[string]int64, len(cards)), make(map[string]int64, len(cards))
		for m, u := range cards {
			all[m], freed[m] = u.Allocated, u.Allocated-u.NonPreemptible
		}
		note := state.MinAlone
		if short = shortfall(c.Queue, reqs, cards, all); short == nil {
			note = state.AllButNonPreemptible
			if short = shortfall(c.Queue, reqs, cards, freed); short == nil {
				f := p.state.FreeableInQueue(pod, c.Queue)
				note, short = f.Note, shortfall(c.Queue, reqs, cards, f.Cards)
			}
		}
		if short != nil {
			return refusal.GangOverQuota{Gang: string(v.Key), Missing: missing, Quota: *short, Note: note}, true
		}
	}
	if c.NonPreemptible {
		// Non-preemptible work may use only the guarantee (SPEC §3.5):
		// preemption frees none of it for a non-preemptible min.
		if r := guaranteeShortfall(v.Key, c, missing, reqs, cards); r != nil {
			return r, true
		}
	}
	return nil, true
}

// gangRequests is what the rest of a gang's min needs in cards.
func gangRequests(c state.PodView, pg *schedv1alpha1.PodGroup, missing int, cards map[string]state.CardUsage) ([]cardmodel.Request, *refusal.AnnotationInvalid) {
	if v, from, ok := cardmodel.Annotation(pg.Annotations, v1alpha1.CardRequestAnnotation, v1alpha1.VolcanoCardRequestAnnotation); ok {
		reqs, err := cardmodel.ParseRequest(v)
		if err != nil {
			return nil, &refusal.AnnotationInvalid{Object: "PodGroup " + pg.Namespace + "/" + pg.Name, Annotation: from, Problem: err.Error()}
		}
		for i := range reqs {
			reqs[i].Count = state.ShareOfMin(reqs[i].Count, missing, int(pg.Spec.MinMember))
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
			reqs = append(reqs, cardmodel.Request{Models: models, Count: n * int64(missing)})
		}
	}
	return reqs, nil
}

// shortfall says, per SPEC §4.6, the first request that does not fit the
// queue's card quota, its alternatives taken in order and freed counted as
// available; nil when all fit.
func shortfall(queue string, reqs []cardmodel.Request, cards map[string]state.CardUsage, freed map[string]int64) *refusal.QuotaExceeded {
	r, short := firstShort(reqs, cards, func(u state.CardUsage, m string) int64 { return u.Capability - u.Allocated + freed[m] })
	if !short {
		return nil
	}
	var used, capability int64
	for _, m := range r.Models {
		used += cards[m].Allocated - freed[m]
		capability += cards[m].Capability
	}
	return &refusal.QuotaExceeded{Queue: queue, Resource: strings.Join(r.Models, "|"), Requested: r.Count, WouldUse: used + r.Count, Capability: capability}
}

// guaranteeShortfall says, for a gang whose min would be charged as
// non-preemptible (SPEC §3.5), the first request that does not fit the
// queue's guarantee of its models less their non-preemptible use; nil when
// all fit.
func guaranteeShortfall(k gang.Key, c state.PodView, missing int, reqs []cardmodel.Request, cards map[string]state.CardUsage) refusal.Refusal {
	r, short := firstShort(reqs, cards, func(u state.CardUsage, _ string) int64 { return u.Guarantee - u.NonPreemptible })
	if !short {
		return nil
	}
	var used, guarantee int64
	for _, m := range r.Models {
		used += cards[m].NonPreemptible
		guarantee += cards[m].Guarantee
	}
	return refusal.GangOverGuarantee{
		Gang: string(k), Preemptibility: string(c.Preemptibility), Missing: missing,
		Queue: c.Queue, Resource: strings.Join(r.Models, "|"), Guarantee: guarantee, WouldUse: used + r.Count,
	}
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
