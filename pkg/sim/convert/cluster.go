package convert

import (
	"cmp"
	"slices"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// cluster is the trace's node groups and what pods are placed against.
type cluster struct {
	groups []group
	// models are the card models, most cards first; cards their cards.
	models []string
	cards  map[string]int
	names  namer
	// split is how many nodes of each model were shared, by replicas.
	split map[string]map[int]int
}

func newCluster(groups []group) *cluster {
	c := &cluster{groups: groups, cards: map[string]int{}, names: namer{}, split: map[string]map[int]int{}}
	for _, g := range groups {
		c.names[g.Name] = true
		if g.Model != "" {
			c.cards[g.Model] += g.Count * g.Cards
		}
	}
	for m := range c.cards {
		c.models = append(c.models, m)
	}
	slices.SortFunc(c.models, func(a, b string) int { return cmp.Or(cmp.Compare(c.cards[b], c.cards[a]), cmp.Compare(a, b)) })
	return c
}

// allowed are the models present that p may use, in its order of
// preference, or the cluster's order when it may use any.
func (c *cluster) allowed(p pod) []string {
	if p.spec == nil {
		return c.models
	}
	return slices.DeleteFunc(slices.Clone(p.spec), func(m string) bool { return c.cards[m] == 0 })
}

// place decides what p asks for: the share it wants on the allowed models
// that have a node of that share it fits on; else the next larger share;
// else whole cards. False when it fits no node of any model it may use.
func (c *cluster) place(p *pod) bool {
	for _, r := range []int{4, 2, 1} {
		if r > p.share {
			continue
		}
		var fit []string
		for _, m := range c.allowed(*p) {
			if c.fits(*p, m, r) {
				fit = append(fit, m)
			}
		}
		if len(fit) == 0 {
			continue
		}
		p.replicas, p.cards, p.cardName = r, 1, strings.Join(fit, "|")
		if r == 1 {
			p.cards = max(p.row.numGPU, 1)
			if p.spec == nil {
				p.cardName = "" // any model, as in the source
			}
		}
		return true
	}
	return false
}

// fits tells whether a node of model m shared r ways (1: whole cards) has
// room for p alone.
func (c *cluster) fits(p pod, m string, r int) bool {
	return slices.ContainsFunc(c.groups, func(g group) bool {
		return g.Model == m && g.replicas == r && g.Count > 0 &&
			(r > 1 || g.Cards >= p.row.numGPU) &&
			g.cpuMilli >= p.row.cpuMilli && g.memMiB >= p.row.memMiB
	})
}

// cardModels are the card models of the trace's queues, sorted: each
// whole-card model and each MPS share model, with how many of each the
// cluster has.
func (c *cluster) cardModels() (names []string, count map[string]int) {
	count = map[string]int{}
	for _, g := range c.groups {
		if g.Model == "" {
			continue
		}
		name := g.Model
		if g.replicas > 1 {
			name = mpsModel(g.Model, g.MemoryMiB, g.replicas)
		}
		if _, ok := count[name]; !ok {
			names = append(names, name)
		}
		count[name] += g.Count * g.Cards * g.replicas
	}
	slices.Sort(names) // a model, then its halves, then its quarters
	return names, count
}

// nodeGroups are the cluster's groups as the trace writes them.
func (c *cluster) nodeGroups() []trace.NodeGroup {
	out := make([]trace.NodeGroup, len(c.groups))
	for i, g := range c.groups {
		out[i] = g.NodeGroup
	}
	return out
}

// totalCards is C: every card of the cluster, shared or not.
func (c *cluster) totalCards() int {
	n := 0
	for _, v := range c.cards {
		n += v
	}
	return n
}
