package queuecache

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
)

// CardUsage is a queue's quota and use of one card model, in cards.
type CardUsage struct {
	// Listed is false for a model the queue has no quota for (it may still
	// be in use, after the Queue was edited): it may not be used.
	Listed                bool
	Guarantee, Capability int64
	// Allocated is what bound and reserved pods use.
	Allocated int64
	// NonPreemptible is the part of Allocated used by non-preemptible pods.
	NonPreemptible int64
}

func (q *queueState) card(model string) *CardUsage {
	c := q.cards[model]
	if c == nil {
		c = &CardUsage{}
		q.cards[model] = c
	}
	return c
}

// setCardQuotaLocked replaces a queue's card quota, keeping what its pods use.
func setCardQuotaLocked(s *queueState, cards map[string]cardmodel.Quota) {
	for model, u := range s.cards {
		if _, ok := cards[model]; !ok {
			u.Listed, u.Guarantee, u.Capability = false, 0, 0
			if u.Allocated == 0 {
				delete(s.cards, model)
			}
		}
	}
	for model, q := range cards {
		u := s.card(model)
		u.Listed, u.Guarantee, u.Capability = true, q.Guarantee, q.Capability
	}
}

// Cards returns a copy of a queue's card quota and use.
func (c *Cache) Cards(queue string) map[string]CardUsage {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.queues[queue]; s != nil {
		return cardsCopy(s)
	}
	return map[string]CardUsage{}
}

func cardsCopy(s *queueState) map[string]CardUsage {
	out := make(map[string]CardUsage, len(s.cards))
	for model, u := range s.cards {
		out[model] = *u
	}
	return out
}

// ElasticUsage is what the elastic pods of the queue's gangs use, in
// resources and in cards: pods placed beyond their gang's min, chosen as
// pkg/gang chooses them. It is counted as free when a gang of the same queue
// asks to be admitted (SPEC §3.4). O(placed pods of the queue's gangs);
// called only when admission would fail.
func (c *Cache) ElasticUsage(queue string, minOf func(gang.Key) int32) (quota.Resources, map[string]int64) {
	type charge struct {
		req   quota.Resources
		cards map[string]int64
	}
	c.mu.RLock()
	byGang := map[gang.Key][]*corev1.Pod{}
	charges := map[types.UID]charge{}
	for uid, e := range c.pods {
		if e.placed() && e.Queue == queue && e.Gang != "" {
			byGang[e.Gang] = append(byGang[e.Gang], e.pod)
			charges[uid] = charge{e.Request, e.cards}
		}
	}
	c.mu.RUnlock()
	res, cards := quota.Resources{}, map[string]int64{}
	for k, pods := range byGang {
		_, elastic := gang.SplitElastic(minOf(k), pods)
		for _, p := range elastic {
			ch := charges[p.UID]
			res.Add(ch.req)
			for model, n := range ch.cards {
				cards[model] += n
			}
		}
	}
	return res, cards
}
