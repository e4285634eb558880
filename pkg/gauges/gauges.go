// Package gauges reads the scheduling state's numbers at scrape time, as
// gauges on the scheduler's metrics endpoint (SPEC §6). It only reads the
// state through its copies (QueueStatuses, Gangs, NodeModels), so the
// state holds no metrics wiring of its own; counters observed as things
// happen are pkg/metrics'.
package gauges

import (
	"sort"

	"k8s.io/component-base/metrics"

	"cardinal.dev/cardinal/pkg/state"
)

// Collector reads the state's numbers at scrape time (SPEC §6): per queue
// and resource, per queue and card model, gangs by state and hold, and the
// card models found on nodes. Label values are queues, resources, card
// models and fixed reasons: bounded by queues × models, never by pods.
type Collector struct {
	metrics.BaseStableCollector
	state *state.State
}

// NewCollector returns a collector of st's numbers; register it with
// legacyregistry.CustomMustRegister.
func NewCollector(st *state.State) *Collector { return &Collector{state: st} }

func desc(name, help string, labels ...string) *metrics.Desc {
	return metrics.NewDesc("cardinal_"+name, help, labels, nil, metrics.ALPHA, "")
}

var (
	queueDescs = map[string]*metrics.Desc{
		"allocated":  desc("queue_allocated", "What bound and reserved pods of a queue use, per resource (cpu in cores, others in their base unit).", "queue", "resource"),
		"guarantee":  desc("queue_guarantee", "A queue's guarantee, per resource.", "queue", "resource"),
		"capability": desc("queue_capability", "A queue's capability, per resource it caps.", "queue", "resource"),
		"deserved":   desc("queue_deserved", "A queue's deserved share, per resource, as the scheduler decides with it.", "queue", "resource"),
		"pending":    desc("queue_pending", "What a queue's pods not yet placed ask for, per resource.", "queue", "resource"),
		"borrowed":   desc("queue_borrowed", "What a queue uses beyond its deserved share, per resource: what queues below theirs may reclaim.", "queue", "resource"),
	}
	cardDescs = map[string]*metrics.Desc{
		"allocated":  desc("queue_card_allocated", "Cards of a model that bound and reserved pods of a queue use.", "queue", "model"),
		"guarantee":  desc("queue_card_guarantee", "A queue's guarantee of a card model, in cards.", "queue", "model"),
		"capability": desc("queue_card_capability", "A queue's capability of a card model, in cards.", "queue", "model"),
		"deserved":   desc("queue_card_deserved", "A queue's deserved share of a card model, in cards.", "queue", "model"),
		"pending":    desc("queue_card_pending", "Cards of a model that a queue's pods not yet placed ask for.", "queue", "model"),
		"borrowed":   desc("queue_card_borrowed", "Cards of a model a queue uses beyond its deserved share.", "queue", "model"),
	}
	gangsDesc      = desc("gangs", "Gangs by state: assembling (members wait at Permit for the rest of the min), parked (waiting for another gang), held (by admission), backing-off, waiting (for their min otherwise), placed (min placed).", "state")
	gangsHeldDesc  = desc("gangs_held", "Gangs held back by admission, by reason: queue-quota, card-quota, gang-split.", "reason")
	longestDesc    = desc("gang_longest_wait_seconds", "How long the gang that has waited longest for its min has waited since its PodGroup was created; 0 when none waits.")
	nodeModelsDesc = desc("node_card_models", "Nodes that carry each card model.", "model")
	unlabelledDesc = desc("nodes_unlabelled_cards", "Nodes whose GPUs carry no product label: their cards have no model (SPEC §1.4).")
)

var gangStates = []string{"assembling", "parked", "held", "backing-off", "waiting", "placed"}

// DescribeWithStability lists the families.
func (c *Collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range sortedDescs(queueDescs) {
		ch <- d
	}
	for _, d := range sortedDescs(cardDescs) {
		ch <- d
	}
	ch <- gangsDesc
	ch <- gangsHeldDesc
	ch <- longestDesc
	ch <- nodeModelsDesc
	ch <- unlabelledDesc
}

func sortedDescs(m map[string]*metrics.Desc) []*metrics.Desc {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*metrics.Desc, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// CollectWithStability reads a copy of the state's numbers. O(queues ×
// resources + gangs + nodes), at scrape time only. A replica that does not
// lead serves none.
func (c *Collector) CollectWithStability(ch chan<- metrics.Metric) {
	if !c.state.Records() {
		return // a standby's state is not what is scheduled with
	}
	gauge := func(d *metrics.Desc, v float64, labels ...string) {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, v, labels...)
	}
	// cpu is kept in millicores; metrics give base units.
	value := func(name string, v int64) float64 {
		if name == "cpu" {
			return float64(v) / 1000
		}
		return float64(v)
	}
	for _, qs := range c.state.QueueStatuses() {
		q, u := qs.Queue.Name, qs.Usage
		for name, v := range u.Allocated {
			gauge(queueDescs["allocated"], value(string(name), v), q, string(name))
			gauge(queueDescs["borrowed"], value(string(name), max(v-u.Deserved[name], 0)), q, string(name))
		}
		for name, v := range u.Guarantee {
			gauge(queueDescs["guarantee"], value(string(name), v), q, string(name))
		}
		for name, v := range u.Capability {
			gauge(queueDescs["capability"], value(string(name), v), q, string(name))
		}
		for name, v := range u.Deserved {
			gauge(queueDescs["deserved"], value(string(name), v), q, string(name))
		}
		for name, v := range u.Pending {
			gauge(queueDescs["pending"], value(string(name), v), q, string(name))
		}
		for m, cu := range u.Cards {
			gauge(cardDescs["allocated"], float64(cu.Allocated), q, m)
			gauge(cardDescs["guarantee"], float64(cu.Guarantee), q, m)
			gauge(cardDescs["capability"], float64(cu.Capability), q, m)
			gauge(cardDescs["deserved"], float64(cu.Deserved), q, m)
			gauge(cardDescs["pending"], float64(cu.Pending), q, m)
			gauge(cardDescs["borrowed"], float64(max(cu.Allocated-cu.Deserved, 0)), q, m)
		}
	}
	now := c.state.Now()
	byState := map[string]int{}
	byHold := map[string]int{"queue-quota": 0, "card-quota": 0, "gang-split": 0}
	var longest float64
	for _, g := range c.state.Gangs() {
		if g.Group == nil || g.Members == 0 {
			continue // no PodGroup, or nothing of it left (a finished job)
		}
		if g.Waiting() && !g.WaitingSince.IsZero() {
			longest = max(longest, now.Sub(g.WaitingSince).Seconds())
		}
		switch {
		case g.MinBound || g.Placed >= g.Min:
			byState["placed"]++
		case len(g.Held) > 0:
			byState["held"]++
		case g.BackingOff(now) != nil:
			byState["backing-off"]++
		case g.Assembling:
			byState["assembling"]++
		case g.Parked > 0:
			byState["parked"]++
		default:
			byState["waiting"]++
		}
		for h := range g.Held {
			byHold[state.HoldKind(h)]++
		}
	}
	for _, s := range gangStates {
		gauge(gangsDesc, float64(byState[s]), s)
	}
	for r, n := range byHold {
		gauge(gangsHeldDesc, float64(n), r)
	}
	gauge(longestDesc, longest)
	models, unlabelled := c.state.NodeModels()
	for m, n := range models {
		gauge(nodeModelsDesc, float64(n), m)
	}
	gauge(unlabelledDesc, float64(unlabelled))
}
