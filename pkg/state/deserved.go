package state

import (
	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
)

// deservedCache is every queue's deserved share, computed from the queues'
// numbers and the cluster's capacity when something read it after they
// changed: at most once per read, never per pod.
type deservedCache struct {
	dirty     bool
	computed  bool
	resources map[string]quota.Resources
	// cards is queue -> model -> deserved cards.
	cards map[string]map[string]int64
}

// refreshDeservedLocked recomputes the deserved shares if anything they
// depend on changed (SPEC §3.2): per resource, with each queue's guarantee,
// capability and weight; per card model, with its card guarantee and
// capability (a model it does not list is capped at 0). What a queue asks
// for is what it has allocated plus what its pending pods ask for; a
// pending pod that names alternatives asks for each of them, and one that
// names none asks for every model its queue lists that its resource fits.
func (s *State) refreshDeservedLocked() {
	if s.books.deserved.computed && !s.books.deserved.dirty {
		return
	}
	resShares := make([]quota.QueueShare, 0, len(s.books.queues))
	cardShares := make([]quota.QueueShare, 0, len(s.books.queues))
	for name, q := range s.books.queues {
		if q.spec == nil {
			continue
		}
		req := q.allocated.Clone()
		req.Add(q.pending)
		resShares = append(resShares, quota.QueueShare{
			Name: name, Weight: max(q.spec.Spec.Weight, 1), Guarantee: q.guarantee, Capability: q.capability, Request: req,
		})
		cs := quota.QueueShare{Name: name, Weight: max(q.spec.Spec.Weight, 1), Guarantee: quota.Resources{}, Capability: quota.Resources{}, Request: quota.Resources{}}
		for m, c := range q.cards {
			model := corev1.ResourceName(m)
			cs.Capability[model] = c.Capability
			if c.Guarantee > 0 {
				cs.Guarantee[model] = c.Guarantee
			}
			cs.Request[model] = c.Allocated + c.Pending
			if !c.Listed {
				continue
			}
			for r, n := range q.pendingCardsAny {
				if cardmodel.Matches(m, r) {
					cs.Request[model] += n
				}
			}
		}
		cardShares = append(cardShares, cs)
	}
	total := quota.Resources{}
	for m, n := range s.books.cardCapacity {
		total[corev1.ResourceName(m)] = n
	}
	s.books.deserved.resources = quota.Deserved(s.books.capacity, resShares)
	s.books.deserved.cards = map[string]map[string]int64{}
	for name, d := range quota.Deserved(total, cardShares) {
		byModel := make(map[string]int64, len(d))
		for m, n := range d {
			byModel[string(m)] = n
		}
		s.books.deserved.cards[name] = byModel
	}
	s.books.deserved.computed, s.books.deserved.dirty = true, false
}
