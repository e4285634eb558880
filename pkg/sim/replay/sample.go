package replay

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/sim/record"
)

// sampleLocked is the cluster now: per queue and model what is allocated,
// asked for and deserved, per model the capacity, and in whole cards the
// allocation against demand and capacity. Deserved is computed as
// Cardinal computes it (SPEC §3.2, pkg/quota): what a queue asks for is its
// allocation plus its pending pods' cards, a pod naming alternatives
// asking for each, one naming none for every model its queue lists that
// its resource fits. The same numbers serve every scheduler.
func (c *cluster) sampleLocked(scheduler string, t float64) []record.Sample {
	capacity := map[string]int64{}
	for _, n := range c.nodes {
		for _, card := range n.detect.Cards {
			capacity[card.Model] += card.Count
		}
	}
	listed := map[string]map[string]bool{}
	for _, q := range c.queues {
		listed[q.Name] = map[string]bool{}
		for _, card := range q.Cards {
			listed[q.Name][card.Name] = true
		}
	}
	alloc, req := map[string]quota.Resources{}, map[string]quota.Resources{}
	for _, q := range c.queues {
		alloc[q.Name], req[q.Name] = quota.Resources{}, quota.Resources{}
	}
	for _, ps := range c.pods {
		if ps.done || ps.stopped || alloc[ps.job.queue] == nil {
			continue
		}
		q, shape := ps.job.queue, ps.job.shape
		if ps.node != "" {
			if ps.model != "" {
				alloc[q][corev1.ResourceName(ps.model)] += ps.cards
				req[q][corev1.ResourceName(ps.model)] += ps.cards
			}
			continue
		}
		if len(shape.models) > 0 {
			for _, m := range shape.models {
				req[q][corev1.ResourceName(m)] += shape.cards
			}
			continue
		}
		for m := range listed[q] {
			if cardmodel.Matches(m, shape.resource) && c.perCardOf(m, shape) {
				req[q][corev1.ResourceName(m)] += shape.cards
			}
		}
	}
	total := quota.Resources{}
	for m, n := range capacity {
		total[corev1.ResourceName(m)] = n
	}
	shares := make([]quota.QueueShare, 0, len(c.queues))
	for _, q := range c.queues {
		s := quota.QueueShare{Name: q.Name, Weight: max(q.Weight, 1), Guarantee: quota.Resources{}, Capability: quota.Resources{}, Request: req[q.Name]}
		for _, card := range q.Cards {
			s.Capability[corev1.ResourceName(card.Name)] = int64(ptr.Deref(card.Capability, card.Guarantee))
			if card.Guarantee > 0 {
				s.Guarantee[corev1.ResourceName(card.Name)] = int64(card.Guarantee)
			}
		}
		// A model the queue does not list is capped at nothing.
		for m := range capacity {
			if !listed[q.Name][m] {
				s.Capability[corev1.ResourceName(m)] = 0
			}
		}
		shares = append(shares, s)
	}
	deserved := quota.Deserved(total, shares)

	models := map[string]bool{}
	for m := range capacity {
		models[m] = true
	}
	var out []record.Sample
	clusterAlloc, clusterReq := map[string]int64{}, map[string]int64{}
	for _, q := range c.queues {
		caps := map[string]record.Sample{}
		for _, card := range q.Cards {
			caps[card.Name] = record.Sample{Guarantee: int64(card.Guarantee), Capability: int64(ptr.Deref(card.Capability, card.Guarantee))}
		}
		names := map[string]bool{}
		for m := range listed[q.Name] {
			names[m] = true
		}
		for m := range req[q.Name] {
			names[string(m)] = true
		}
		for _, m := range sortedKeys(names) {
			r := corev1.ResourceName(m)
			cp := caps[m]
			if !listed[q.Name][m] {
				cp.Capability = 0
			}
			out = append(out, record.Sample{Scheduler: scheduler, T: t, Queue: q.Name, Model: m, PerCard: c.perCard(m),
				Allocated: alloc[q.Name][r], Request: req[q.Name][r], Deserved: deserved[q.Name][r],
				Guarantee: cp.Guarantee, Capability: cp.Capability})
			clusterAlloc[m] += alloc[q.Name][r]
			clusterReq[m] += req[q.Name][r]
			models[m] = true
		}
	}
	// The cluster in whole cards, kept in thousandths so shares add up.
	var alloc1, cap1, req1, demand float64
	for _, m := range sortedKeys(models) {
		pc := float64(c.perCard(m))
		out = append(out, record.Sample{Scheduler: scheduler, T: t, Model: m, PerCard: int(pc),
			Allocated: clusterAlloc[m], Request: clusterReq[m], Capacity: capacity[m], Capability: -1})
		alloc1 += float64(clusterAlloc[m]) / pc
		cap1 += float64(capacity[m]) / pc
		req1 += float64(clusterReq[m]) / pc
	}
	for _, j := range c.jobs {
		if j.done.IsZero() {
			demand += float64(j.spec.Pods-j.succeeded) * j.shape.whole
		}
	}
	whole := record.Sample{Scheduler: scheduler, T: t, PerCard: 1000, Allocated: milli(alloc1), Capacity: milli(cap1),
		Request: milli(req1), Capability: -1, Demand: demand}
	return append(out, whole)
}

// perCardOf tells whether an MPS model is shared the ways a pod's share
// asks for (its node selector); other models always fit.
func (c *cluster) perCardOf(model string, shape podShape) bool {
	if shape.resource != cardmodel.MPSResource {
		return true
	}
	return shape.whole > 0 && float64(c.perCard(model))*shape.whole == float64(shape.cards)
}

func (c *cluster) perCard(model string) int {
	if n := c.catalog.perCard[model]; n > 0 {
		return n
	}
	return 1
}

func milli(f float64) int64 { return int64(f*1000 + 0.5) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
