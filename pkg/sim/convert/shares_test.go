package convert

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// ask is what a job asks for, as the tests compare it.
type ask struct {
	Cards    int
	Resource string
	CardName string
}

func asks(tr *trace.Trace) map[string]ask {
	out := map[string]ask{}
	for _, j := range tr.Jobs {
		out[j.Name] = ask{j.Cards, j.Resource, j.CardName}
	}
	return out
}

func noGangs(o *Options) { o.Gangs = 0 }

func TestShareAtTheEdges(t *testing.T) {
	nodes := makeNodes().Add("T4", 10, 2, 104000, 524288).CSV()
	pods := podsCSV(
		makePod("openb-pod-0250").GPU(1, 250),
		makePod("openb-pod-0251").GPU(1, 251),
		makePod("openb-pod-0500").GPU(1, 500),
		makePod("openb-pod-0501").GPU(1, 501),
		makePod("openb-pod-1000").GPU(1, 1000),
		makePod("openb-pod-0001").GPU(1, 1),
		makePod("openb-pod-8000").GPU(8, 1000).Spec("T4"),
		makePod("openb-pod-2000").GPU(2, 1000).Spec("T4"),
	)
	// The 8-card pod fits no T4 node and is left out.
	tr := mustConvert(t, nodes, pods, opts(noGangs))
	want := map[string]ask{
		"p-0250": {1, "mps-4", "T4"},
		"p-0251": {1, "mps-2", "T4"},
		"p-0500": {1, "mps-2", "T4"},
		"p-0501": {1, "gpu", ""},
		"p-1000": {1, "gpu", ""},
		"p-0001": {1, "mps-4", "T4"},
		"p-2000": {2, "gpu", "T4"},
	}
	if diff := cmp.Diff(want, asks(tr)); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
	if !strings.Contains(tr.About, "exceed every such node): 1 pod.") {
		t.Errorf("About does not count the 8-card pod left out:\n%s", tr.About)
	}
	checkPlaceable(t, tr)
}

func TestSharesFallBack(t *testing.T) {
	nodes := makeNodes().
		Add("T4", 10, 2, 104000, 524288).
		Add("P100", 1, 2, 64000, 262144). // one node: never shared
		Add("V100M16", 2, 1, 32000, 131072).
		CSV()
	pods := podsCSV(
		makePod("openb-pod-0001").GPU(1, 200).Spec("P100"),
		makePod("openb-pod-0002").GPU(1, 200).Spec("P100|T4"),
		makePod("openb-pod-0003").GPU(1, 400).Spec("P100|T4"),
		// V100M16 has two nodes: one stays whole, the other is shared in
		// halves, which are asked for longer than quarters.
		makePod("openb-pod-0004").GPU(1, 400).Spec("V100M16").Run(7200),
		makePod("openb-pod-0005").GPU(1, 100).Spec("V100M16").Run(60),
		makePod("openb-pod-0006").GPU(1, 100).Spec("T4"),
		makePod("openb-pod-0007").GPU(1, 400).Spec("T4"),
	)
	tr := mustConvert(t, nodes, pods, opts(noGangs))
	want := map[string]ask{
		"p-0001": {1, "gpu", "P100"},
		"p-0002": {1, "mps-4", "T4"},
		"p-0003": {1, "mps-2", "T4"},
		"p-0004": {1, "mps-2", "V100M16"},
		"p-0005": {1, "mps-2", "V100M16"},
		"p-0006": {1, "mps-4", "T4"},
		"p-0007": {1, "mps-2", "T4"},
	}
	if diff := cmp.Diff(want, asks(tr)); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
	for _, s := range []string{"no quarter on the models they allow and take a half: 1.", "or larger on the models they allow and take a whole card: 1."} {
		if !strings.Contains(tr.About, s) {
			t.Errorf("About does not say %q:\n%s", s, tr.About)
		}
	}
	checkPlaceable(t, tr)
}

func TestSpecAlternativesKeptInOrderAndDeduplicated(t *testing.T) {
	nodes := makeNodes().
		Add("V100M16", 2, 4, 32000, 131072).
		Add("V100M32", 2, 8, 96000, 786432).
		Add("T4", 2, 2, 104000, 524288).
		CSV()
	pods := podsCSV(
		makePod("openb-pod-0001").Spec("V100M16|V100M32|V100M32"),
		makePod("openb-pod-0002").Spec("V100M32|V100M16"),
		makePod("openb-pod-0003").Spec("A10|T4"), // no A10 in the cluster
		makePod("openb-pod-0004").Spec("T4|V100M32|T4|V100M16"),
		makePod("openb-pod-0005").GPU(8, 1000).Spec("T4|V100M32|V100M16"), // only V100M32 has 8 cards
	)
	tr := mustConvert(t, nodes, pods, opts(noGangs))
	want := map[string]ask{
		"p-0001": {1, "gpu", "V100M16|V100M32"},
		"p-0002": {1, "gpu", "V100M32|V100M16"},
		"p-0003": {1, "gpu", "T4"},
		"p-0004": {1, "gpu", "T4|V100M32|V100M16"},
		"p-0005": {8, "gpu", "V100M32"},
	}
	if diff := cmp.Diff(want, asks(tr)); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
}

func TestShareNodesFollowDemand(t *testing.T) {
	// 20 T4 nodes of 2 cards: whole cards are asked 600 card-seconds,
	// halves 10 × 0.5 × 600 = 3000 and quarters 4 × 0.25 × 600 = 600, so
	// halves get 40 × 3000/4200 ≈ 28.6 cards (14 nodes) and quarters
	// 40 × 600/4200 ≈ 5.7 cards (3 nodes).
	b := []*podB{makePod("openb-pod-w").GPU(1, 1000).Spec("T4")}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		b = append(b, makePod("openb-pod-h"+n).GPU(1, 470))
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		b = append(b, makePod("openb-pod-q"+n).GPU(1, 230))
	}
	tr := mustConvert(t, makeNodes().Add("T4", 20, 2, 104000, 524288).CSV(), podsCSV(b...), opts(noGangs))
	got := map[string]int{}
	for _, g := range tr.Nodes {
		got[g.Name] = g.Count
	}
	want := map[string]int{"t4-2gpu-104c": 3, "t4-2gpu-104c-mps2": 14, "t4-2gpu-104c-mps4": 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node groups (-want +got):\n%s", diff)
	}
	for _, g := range tr.Nodes {
		if g.MemoryMiB != 15360 || (g.MPS != nil && !strings.HasSuffix(g.Name, fmt.Sprintf("-mps%d", g.MPS.Replicas))) {
			t.Errorf("group %s: memory %d MiB, mps %+v", g.Name, g.MemoryMiB, g.MPS)
		}
	}
	checkPlaceable(t, tr)
}

func TestWholeCardsSharesNothing(t *testing.T) {
	tr := mustConvert(t, makeNodes().Add("T4", 4, 2, 104000, 524288).CSV(),
		podsCSV(makePod("openb-pod-0001").GPU(1, 100), makePod("openb-pod-0002").GPU(1, 400)),
		opts(func(o *Options) { o.WholeCards = true; o.Gangs = 0 }))
	if diff := cmp.Diff(map[string]ask{"p-0001": {1, "gpu", ""}, "p-0002": {1, "gpu", ""}}, asks(tr)); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
	if len(tr.Nodes) != 1 || tr.Nodes[0].MPS != nil {
		t.Errorf("nodes %+v, want one group of whole cards", tr.Nodes)
	}
}

func TestQueuesListEveryCardModel(t *testing.T) {
	nodes := makeNodes().Add("T4", 10, 2, 104000, 524288).Add("A10", 1, 1, 128000, 1048576).CSV()
	pods := podsCSV(makePod("openb-pod-0001").GPU(1, 200).Spec("T4"))
	tr := mustConvert(t, nodes, pods, opts(func(o *Options) { o.Queues = 3 }))
	// Quarters are all that is asked of T4: all its nodes but the one its
	// group keeps whole are shared 4 ways, 9 nodes of 2 cards.
	i32 := func(v int32) *int32 { return &v }
	want := []trace.CardQuota{
		{Name: "A10", Guarantee: 0, Capability: i32(1)},
		{Name: "T4", Guarantee: 0, Capability: i32(2)},
		{Name: "T4/mps-15g*1/4", Guarantee: 12, Capability: i32(72)},
	}
	if len(tr.Queues) != 3 {
		t.Fatalf("%d queues, want 3", len(tr.Queues))
	}
	for i, q := range tr.Queues {
		if q.Name != queueName(i) || q.Weight != 1 || q.Reclaimable == nil || !*q.Reclaimable {
			t.Errorf("queue %d is %s, weight %d, reclaimable %v", i, q.Name, q.Weight, q.Reclaimable)
		}
		if diff := cmp.Diff(want, q.Cards); diff != "" {
			t.Errorf("queue %s cards (-want +got):\n%s", q.Name, diff)
		}
	}
}
