package replay

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

// catalog is what the trace's nodes carry, named as Cardinal names it
// (cardmodel.Detect on the nodes the sim makes), for every node the trace
// ever has: at the start, added, or re-sliced.
type catalog struct {
	// perCard is model -> its units in one whole card.
	perCard map[string]int
	// resource is model -> the resource pods request it through.
	resource map[string]corev1.ResourceName
	// product is model -> the card product it is part of.
	product map[string]string
	// migSlices is MIG profile -> slices per card.
	migSlices map[string]int
	// cardResources are the card resources any node has, sorted.
	cardResources []corev1.ResourceName
}

func newCatalog(t *trace.Trace) *catalog {
	c := &catalog{perCard: map[string]int{}, resource: map[string]corev1.ResourceName{}, product: map[string]string{}, migSlices: map[string]int{}}
	groups := slices.Clone(t.Nodes)
	for _, e := range t.Events {
		switch {
		case e.AddNodes != nil:
			groups = append(groups, *e.AddNodes)
		case e.Reslice != nil:
			if g, ok := groupOfNode(t, e.Reslice.Node); ok {
				groups = append(groups, resliced(g, e.Reslice))
			}
		}
	}
	for _, g := range groups {
		if g.Cards == 0 {
			continue
		}
		if g.MIG != nil {
			c.migSlices[g.MIG.Profile] = g.MIG.Slices
		}
		for _, card := range cardmodel.Detect(nodeOf(g, g.Name)).Cards {
			c.perCard[card.Model] = perCard(g)
			c.resource[card.Model] = card.Resource
			c.product[card.Model] = g.Model
			if !slices.Contains(c.cardResources, card.Resource) {
				c.cardResources = append(c.cardResources, card.Resource)
			}
		}
	}
	slices.Sort(c.cardResources)
	return c
}

// modelsOf are the models of product that pods requesting resource use,
// for MPS only those shared perCard ways.
func (c *catalog) modelsOf(product string, r corev1.ResourceName, perCard int) []string {
	var out []string
	for m, p := range c.product {
		if p == product && c.resource[m] == r && (r != cardmodel.MPSResource || c.perCard[m] == perCard) {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// models are every model, sorted.
func (c *catalog) models() []string {
	out := make([]string, 0, len(c.perCard))
	for m := range c.perCard {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// queues are the trace's queues, or, for a trace without queues, one queue
// named default that may use every model without limit (what a cluster
// without quota gives everyone). A queue naming a model no node carries is
// an error that lists the models there are.
func (c *catalog) queues(t *trace.Trace) ([]trace.Queue, error) {
	if len(t.Queues) == 0 {
		q := trace.Queue{Name: defaultQueue, Weight: 1}
		for _, m := range c.models() {
			q.Cards = append(q.Cards, trace.CardQuota{Name: m, Capability: ptr.To[int32](math.MaxInt32)})
		}
		return []trace.Queue{q}, nil
	}
	for i, q := range t.Queues {
		for j, card := range q.Cards {
			if _, ok := c.perCard[card.Name]; !ok {
				return nil, fmt.Errorf("queues[%d].cards[%d].name: no node of the trace carries %q (its models: %v)", i, j, card.Name, c.models())
			}
		}
	}
	return t.Queues, nil
}

// groupOfNode finds the group a node <group>-<i> of the trace belongs to.
func groupOfNode(t *trace.Trace, node string) (trace.NodeGroup, bool) {
	groups := slices.Clone(t.Nodes)
	for _, e := range t.Events {
		if e.AddNodes != nil {
			groups = append(groups, *e.AddNodes)
		}
	}
	for _, g := range groups {
		for i := range max(g.Count, 1) {
			if fmt.Sprintf("%s-%d", g.Name, i) == node {
				return g, true
			}
		}
	}
	return trace.NodeGroup{}, false
}

// resliced is a group with its cards split anew.
func resliced(g trace.NodeGroup, r *trace.Reslice) trace.NodeGroup {
	g.MIG, g.MPS = r.MIG, r.MPS
	return g
}
