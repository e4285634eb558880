package convert

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// stats are the counts the trace's About reports.
type stats struct {
	files          [2]string
	nodes, groups  int
	cpuOnly        int
	unplaceable    int
	pods           int
	asked          map[int]int    // pods by the share asked for (1, 2, 4)
	fell           map[[2]int]int // pods by share asked and share got, when they differ
	multi          int            // pods of several cards
	neverScheduled int
	raised, cut    int
	gangs          map[int]int // gangs by size
	elastic        int
	jobs           int
	offered        float64 // card-seconds
	span           time.Duration
	gapCap         int64
}

func (s *stats) countPod(p pod) {
	if s.asked == nil {
		s.asked, s.fell = map[int]int{}, map[[2]int]int{}
	}
	s.pods++
	s.asked[p.share]++
	if p.replicas != p.share {
		s.fell[[2]int{p.share, p.replicas}]++
	}
	if p.row.numGPU > 1 {
		s.multi++
	}
	if p.row.scheduled < 0 {
		s.neverScheduled++
	}
	switch p.clipped {
	case -1:
		s.raised++
	case +1:
		s.cut++
	}
}

func (s *stats) countUnit(u unit) {
	if len(u.members) < 2 {
		return
	}
	if s.gangs == nil {
		s.gangs = map[int]int{}
	}
	s.gangs[len(u.members)]++
	if u.min < len(u.members) {
		s.elastic++
	}
}

// about says, in plain sentences, where the trace comes from and every
// choice the converter made, with its numbers.
func (s stats) about(c *cluster, o Options) string {
	var b strings.Builder
	say := func(format string, args ...any) {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, format, args...)
	}
	say("Converted from Alibaba's openb-2023 GPU cluster trace (%s, %s): Weng et al., \"Beware of Fragmentation: "+
		"Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent\", USENIX ATC '23; data from "+
		"github.com/alibaba/clusterdata, cluster-trace-gpu-v2023.", s.files[0], s.files[1])

	var cards, mem []string
	var undisclosed []string
	for _, m := range c.models {
		cards = append(cards, fmt.Sprintf("%s %d", m, c.cards[m]))
		mem = append(mem, fmt.Sprintf("%s %d MiB", m, o.CardMemoryMiB[m]))
		if slices.Contains([]string{"G1", "G2", "G3"}, m) {
			undisclosed = append(undisclosed, m)
		}
	}
	slices.Sort(undisclosed)
	say("Nodes: %d nodes with %d cards (%s), in %d groups of alike nodes (same model, cards, CPU and memory).",
		s.nodes, c.totalCards(), strings.Join(cards, ", "), s.groups)
	say("A card's memory, which only names MPS shares, is taken as %s.", list(mem))
	if len(undisclosed) > 0 {
		say("%s are undisclosed internal models of the source: their memory here is chosen, not known.", list(undisclosed))
	}

	s.aboutShares(say, c, o)
	say("Pods asking for several cards (%d) ask for that many whole cards.", s.multi)
	say("The %d CPU-only pods (num_gpu 0) are left out: the what-if is about cards.", s.cpuOnly)
	if s.unplaceable > 0 {
		say("Left out as fitting no node of the models they allow (their cards, CPU or memory exceed every such node): %s.",
			plural(s.unplaceable, "pod"))
	}
	say("A pod runs as long as it ran in the source (deletion_time minus scheduled_time, or minus creation_time for the %s never scheduled), "+
		"clipped to [%v, %v]: %d were raised to the shortest and %d cut to the longest.",
		plural(s.neverScheduled, "pod"), o.MinDuration, o.MaxDuration, s.raised, s.cut)
	say("Jobs arrive in the source's creation order, but not at its times: the source's pod list was built to fill the cluster, "+
		"not to run at the times it gives. The gaps between creations are capped at their 99th percentile (%ds) and scaled "+
		"so that arrivals span S = W / (Load × C) = %v, where W = %.1f card-hours is the work offered (a share counted as its part of a card), "+
		"C = %d cards and Load = %v: demand exceeds supply while jobs arrive.",
		s.gapCap, s.span.Round(time.Second), s.offered/3600, c.totalCards(), o.Load)

	how := "uniformly"
	if o.Skew != 0 {
		how = fmt.Sprintf("team-i in proportion to 1/i^%v", o.Skew)
	}
	say("Queues: %d queues, %s, of weight 1 and reclaimable; each lists every card model (whole cards and MPS shares) "+
		"with a guarantee of floor(%v × the model's cards / %d) and a capability of all of its cards, so a queue may borrow whatever is idle. "+
		"Jobs go to queues at random (seed %d), %s.", o.Queues, queueRange(o.Queues), o.Guarantee, o.Queues, o.Seed, how)

	s.aboutGangs(say, o)
	var prios []string
	for _, q := range slices.Sorted(maps.Keys(o.Priorities)) {
		prios = append(prios, fmt.Sprintf("%s %d", q, o.Priorities[q]))
	}
	say("Priorities by QoS class: %s.", list(prios))
	if o.Preemptibility == "preemptible" {
		say("Every job is preemptible, LS included: Cardinal's non-preemptible work may only use its queue's guarantee, " +
			"and keeping LS reclaimable lets all three schedulers place it the same way.")
	} else {
		say("Every job is %s.", o.Preemptibility)
	}
	say("In all: %d jobs of %d pods.", s.jobs, s.pods)
	return b.String()
}

func (s stats) aboutShares(say func(string, ...any), c *cluster, o Options) {
	if o.WholeCards {
		say("GPU-sharing pods (gpu_milli below 1000) get whole cards, and no node is shared.")
		return
	}
	say("GPU sharing: a pod asking for at most 250 thousandths of a card gets a quarter card (an MPS share of a card shared 4 ways, "+
		"resource nvidia.com/gpu.shared), at most 500 a half card, more a whole card: %d pods ask for a quarter, %d for a half.",
		s.asked[4], s.asked[2])
	var split []string
	for _, m := range c.models {
		var kinds []string
		for _, r := range []int{2, 4} {
			if n := c.split[m][r]; n > 0 {
				kinds = append(kinds, fmt.Sprintf("%s in %s", plural(n, "node"), map[int]string{2: "halves", 4: "quarters"}[r]))
			}
		}
		if len(kinds) > 0 {
			split = append(split, fmt.Sprintf("%s: %s", m, list(kinds)))
		}
	}
	if len(split) > 0 {
		say("For each model, nodes are shared in proportion to the card-seconds asked of it for halves and quarters against whole cards "+
			"(a pod that may use several models asking each in proportion to its cards), each node group keeping a node of whole cards: %s.",
			strings.Join(split, "; "))
	}
	say("A sharing pod names the models it allows that have its share, in its order, or every model with its share, most cards first, " +
		"when it allows any.")
	if n := s.fell[[2]int{4, 2}]; n > 0 {
		say("Pods that found no quarter on the models they allow and take a half: %d.", n)
	}
	if n := s.fell[[2]int{4, 1}] + s.fell[[2]int{2, 1}]; n > 0 {
		say("Sharing pods that found no share of their size or larger on the models they allow and take a whole card: %d.", n)
	}
}

func (s stats) aboutGangs(say func(string, ...any), o Options) {
	say("Gangs, which the source has none of: a whole-card pod, in creation order, starts a gang with chance %v, taking the next alike pods "+
		"(same cards, models, CPU, memory and QoS class) created within %v of it, up to a size drawn uniformly in [2, %d]; "+
		"a gang of one stays a plain job. A gang runs as long as its longest pod and arrives with its first; "+
		"with chance %v it is elastic, its min half its pods rounded up.", o.Gangs, o.GangWindow, o.MaxGangSize, o.Elastic)
	if len(s.gangs) == 0 {
		say("No gang formed.")
		return
	}
	var sizes []string
	total := 0
	for _, n := range slices.Sorted(maps.Keys(s.gangs)) {
		sizes = append(sizes, fmt.Sprintf("%d of %d pods", s.gangs[n], n))
		total += s.gangs[n]
	}
	say("Gangs formed: %d (%s), %d of them elastic.", total, list(sizes), s.elastic)
}

// queueRange names queues 1 to n.
func queueRange(n int) string {
	switch n {
	case 1:
		return queueName(0)
	case 2:
		return queueName(0) + " and " + queueName(1)
	}
	return queueName(0) + " … " + queueName(n-1)
}

// plural is n things: "1 pod", "2 pods".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// list joins items as a sentence does: "a, b and c".
func list(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
