package convert

import (
	"cmp"
	"fmt"
	"slices"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// demand is the card-seconds pods ask of each model, by the ways the card
// is shared (1, 2, 4). A pod that may use several models asks each in
// proportion to its cards.
func (c *cluster) demand(pods []pod) map[string]map[int]float64 {
	out := map[string]map[int]float64{}
	for _, p := range pods {
		models := c.allowed(p)
		total := 0
		for _, m := range models {
			total += c.cards[m]
		}
		asked := float64(max(p.row.numGPU, 1)) / float64(p.share) * p.duration.Seconds()
		for _, m := range models {
			if out[m] == nil {
				out[m] = map[int]float64{}
			}
			out[m][p.share] += asked * float64(c.cards[m]) / float64(total)
		}
	}
	return out
}

// shareNodes splits off nodes of each model as MPS nodes, shared 2 ways
// (halves) and 4 ways (quarters), so that each kind's part of the model's
// cards is its part of the card-seconds asked of the model (demand).
func (c *cluster) shareNodes(demand map[string]map[int]float64) {
	taken := make([]map[int]int, len(c.groups))
	for _, m := range c.models {
		c.pickShared(m, demand[m], taken)
	}
	var out []group
	for i, g := range c.groups {
		whole := g
		whole.Count -= taken[i][2] + taken[i][4]
		if whole.Count > 0 {
			out = append(out, whole)
		}
		for _, r := range []int{2, 4} {
			if n := taken[i][r]; n > 0 {
				s := g
				s.Name = c.names.unique(fmt.Sprintf("%s-mps%d", g.Name[:min(len(g.Name), maxName-5)], r))
				s.Count, s.replicas, s.MPS = n, r, &trace.MPS{Replicas: r}
				out = append(out, s)
			}
		}
	}
	c.groups = out
}

// pickShared picks the nodes of model m to share, given what is asked of
// it (d, card-seconds by replicas), into taken (per group, by replicas).
// A model of two nodes or more that is asked for shares gets at least one
// shared node, and each kind asked for gets one while nodes last, the kind
// asked for more first. Nodes come from the model's largest groups first,
// and each group keeps a node of whole cards, so every node shape a
// whole-card pod may need is still there; only when every group of the
// model is a single node is the node with the fewest cards shared.
func (c *cluster) pickShared(m string, d map[int]float64, taken []map[int]int) {
	if d[2]+d[4] == 0 {
		return
	}
	var idx []int
	nodes := 0
	for i, g := range c.groups {
		if g.Model == m {
			idx = append(idx, i)
			nodes += g.Count
		}
	}
	if nodes < 2 {
		return
	}
	free := map[int]int{}
	freeTotal := 0
	for _, i := range idx {
		free[i] = c.groups[i].Count - 1
		freeTotal += free[i]
	}
	if freeTotal == 0 {
		fewest := slices.MinFunc(idx, func(a, b int) int { return cmp.Compare(c.groups[a].Cards, c.groups[b].Cards) })
		free[fewest], freeTotal = 1, 1
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(c.groups[b].Count, c.groups[a].Count) })
	kinds := slices.DeleteFunc([]int{2, 4}, func(r int) bool { return d[r] == 0 })
	slices.SortStableFunc(kinds, func(a, b int) int { return cmp.Compare(d[b], d[a]) })
	for k, r := range kinds {
		keep := len(kinds) - 1 - k // past its first node, a kind leaves a node for each kind still to come
		target := float64(c.cards[m]) * d[r] / (d[1] + d[2] + d[4])
		got, n := 0, 0
		for _, i := range idx {
			cards := c.groups[i].Cards
			// Take a node while it brings the cards shared nearer the target.
			for free[i] > 0 && (n == 0 || freeTotal > keep && float64(got)+float64(cards)/2 < target) {
				if taken[i] == nil {
					taken[i] = map[int]int{}
				}
				taken[i][r]++
				free[i]--
				freeTotal--
				got += cards
				n++
			}
		}
		if n > 0 {
			if c.split[m] == nil {
				c.split[m] = map[int]int{}
			}
			c.split[m][r] = n
		}
	}
}
