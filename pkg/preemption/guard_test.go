package preemption

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
)

const (
	h200 = "NVIDIA-H200"
	rtx  = "NVIDIA-GeForce-RTX-4090"
)

// cardsUsage is a queue's use of H200 cards: allocated of deserved.
func cardsUsage(allocated, deserved int64, reclaimable bool) state.Usage {
	return state.Usage{Exists: true, Reclaimable: reclaimable, Cards: map[string]state.CardUsage{
		h200: {Listed: true, Allocated: allocated, Deserved: deserved},
	}}
}

// TestBelow: reclaim is for what the preemptor's queue asks for, is below
// its deserved share of, and the cluster has too little of free.
func TestBelow(t *testing.T) {
	ask := asks{resources: quota.Resources{corev1.ResourceCPU: 1000}, models: map[string]bool{h200: true}, cards: 2}
	tests := []struct {
		name string
		u    state.Usage
		f    free
		want []string
	}{
		{"below its H200 share, too few free", cardsUsage(1, 5, true), free{cards: map[string]int64{h200: 1}}, []string{h200}},
		{"below its share, but enough free", cardsUsage(1, 5, true), free{cards: map[string]int64{h200: 2}}, nil},
		{"at its share", cardsUsage(5, 5, true), free{cards: map[string]int64{h200: 0}}, nil},
		{"below its CPU share too, and CPU is short", state.Usage{
			Allocated: quota.Resources{corev1.ResourceCPU: 0}, Deserved: quota.Resources{corev1.ResourceCPU: 4000},
			Cards: map[string]state.CardUsage{h200: {Listed: true, Allocated: 0, Deserved: 2}},
		}, free{resources: quota.Resources{corev1.ResourceCPU: 500}, cards: map[string]int64{}}, []string{h200, "cpu"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range below(tc.u, ask, tc.f) {
				got = append(got, d.name)
			}
			if !cmp.Equal(got, tc.want) {
				t.Errorf("short of %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReclaimFrom: only queues above their deserved share of what the
// preemptor's queue is short of, and that exist, are reclaimed from.
func TestReclaimFrom(t *testing.T) {
	short := []dim{{name: h200, cards: true}}
	usage := map[string]state.Usage{
		"me":       cardsUsage(0, 4, true),
		"borrower": cardsUsage(6, 4, false),
		"fair":     cardsUsage(4, 4, true),
		"gone":     {Cards: map[string]state.CardUsage{h200: {Allocated: 6, Deserved: 0}}},
	}
	got := reclaimFrom(state.Preemptor{Queue: "me"}, usage, short)
	if want := map[string]bool{"borrower": false}; !cmp.Equal(got, want) {
		t.Errorf("reclaims from %v, want %v", got, want)
	}
	if got := reclaimFrom(state.Preemptor{Queue: "me"}, usage, nil); len(got) != 0 {
		t.Errorf("short of nothing, reclaims from %v", got)
	}
}

// TestAtShare: pods whose eviction alone would take their queue below its
// deserved share of a model the preemptor may use, or of a resource its
// queue is short of, are no victims; elsewhere the queue may give.
func TestAtShare(t *testing.T) {
	models := map[string]bool{h200: true, rtx: true}
	pod := func(cards map[string]int64, cpu int64) state.PodView {
		return state.PodView{Facts: state.Facts{Request: quota.Resources{corev1.ResourceCPU: cpu}}, Cards: cards}
	}
	usage := state.Usage{
		Allocated: quota.Resources{corev1.ResourceCPU: 4000}, Deserved: quota.Resources{corev1.ResourceCPU: 4000},
		Cards: map[string]state.CardUsage{
			h200: {Listed: true, Allocated: 24, Deserved: 8},
			rtx:  {Listed: true, Allocated: 8, Deserved: 8},
		},
	}
	cpuShort := []dim{{name: string(corev1.ResourceCPU)}}
	h200Short := []dim{{name: h200, cards: true}}
	tests := []struct {
		name  string
		pods  []state.PodView
		short []dim
		want  bool
	}{
		{"on the model it is above its share of", []state.PodView{pod(map[string]int64{h200: 8}, 0)}, nil, false},
		{"all it is above its share by", []state.PodView{pod(map[string]int64{h200: 8}, 0), pod(map[string]int64{h200: 8}, 0)}, nil, false},
		{"more than it is above its share by", []state.PodView{pod(map[string]int64{h200: 8}, 0), pod(map[string]int64{h200: 9}, 0)}, nil, true},
		{"on the model it is at its share of", []state.PodView{pod(map[string]int64{rtx: 1}, 0)}, nil, true},
		{"on a model the preemptor may not use", []state.PodView{pod(map[string]int64{"NVIDIA-L40S": 1}, 0)}, nil, false},
		{"CPU its queue is at its share of, CPU not short", []state.PodView{pod(map[string]int64{h200: 1}, 1000)}, nil, false},
		{"CPU its queue is at its share of, CPU short", []state.PodView{pod(map[string]int64{h200: 1}, 1000)}, cpuShort, true},
		{"a short model it is above its share of, and one it is at", []state.PodView{pod(map[string]int64{h200: 8, rtx: 1}, 0)}, h200Short, false},
		{"a short model it would fall below its share of", []state.PodView{pod(map[string]int64{h200: 17}, 0)}, h200Short, true},
		{"only a model it is at its share of, with another short", []state.PodView{pod(map[string]int64{rtx: 1}, 0)}, h200Short, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := atShare(usage, tc.pods, models, tc.short); got != tc.want {
				t.Errorf("at share %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGuard: a reclaim happens only if afterwards the reclaiming queue is
// not above its deserved share and no victim queue is below its own (SPEC
// §5.6); preemption within the queue is not guarded.
func TestGuard(t *testing.T) {
	short := []dim{{name: h200, cards: true}}
	pre := state.Preemptor{Queue: "b"}
	onePerPod := func(string, *corev1.Pod) map[string]int64 { return map[string]int64{h200: 1} }
	members := func(n int) []*member {
		var out []*member
		for range n {
			out = append(out, &member{pod: builder.MakePod("b", "m").GPU(1).Obj(), node: "n"})
		}
		return out
	}
	victims := func(queue string, n int) []*unit {
		var out []*unit
		for range n {
			out = append(out, &unit{kind: elasticPod, queue: queue, reclaim: queue != "b",
				pods: []state.PodView{{Cards: map[string]int64{h200: 1}}}})
		}
		return out
	}
	tests := []struct {
		name    string
		a, b    state.Usage
		members int
		evicted []*unit
		want    string
	}{
		{"b to its share, a to its share", cardsUsage(7, 5, true), cardsUsage(3, 5, true), 2, victims("a", 2), ""},
		{"b would go above its share", cardsUsage(8, 5, true), cardsUsage(3, 5, true), 3, victims("a", 3),
			"queue b would be above its deserved NVIDIA-H200 share, 6 of 5"},
		{"a would fall below its share", cardsUsage(6, 5, true), cardsUsage(2, 5, true), 2, victims("a", 2),
			"queue a would fall below its deserved NVIDIA-H200 share, 4 of 5"},
		{"within b's own queue nothing is guarded", cardsUsage(5, 5, true), cardsUsage(9, 5, true), 1, victims("b", 1), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			usage := map[string]state.Usage{"a": tc.a, "b": tc.b}
			if got := guard(pre, usage, members(tc.members), tc.evicted, short, onePerPod); got != tc.want {
				t.Errorf("guard %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGuardOnEveryModelTaken: a gang that may use H200 or RTX, its queue
// short of H200 only, may not take RTX cards from a queue at its RTX
// share to land there: its own queue would be above its RTX share, and
// the other would take them back (SPEC §5.6).
func TestGuardOnEveryModelTaken(t *testing.T) {
	short := []dim{{name: h200, cards: true}}
	pre := state.Preemptor{Queue: "b"}
	both := func(h, hd, r, rd int64) state.Usage {
		return state.Usage{Exists: true, Reclaimable: true, Cards: map[string]state.CardUsage{
			h200: {Listed: true, Allocated: h, Deserved: hd}, rtx: {Listed: true, Allocated: r, Deserved: rd}}}
	}
	on := func(model string) func(string, *corev1.Pod) map[string]int64 {
		return func(string, *corev1.Pod) map[string]int64 { return map[string]int64{model: 1} }
	}
	members := []*member{{pod: builder.MakePod("b", "m-0").GPU(1).Obj(), node: "n"}, {pod: builder.MakePod("b", "m-1").GPU(1).Obj(), node: "n"}}
	victims := func(cards map[string]int64) []*unit {
		return []*unit{{kind: elasticPod, queue: "a", reclaim: true, pods: []state.PodView{{Cards: cards}, {Cards: cards}}}}
	}
	one := func(model string) map[string]int64 { return map[string]int64{model: 1} }
	tests := []struct {
		name    string
		a, b    state.Usage
		victims map[string]int64 // each of the two victims' cards
		lands   string           // where the members land
		want    string
	}{
		{"taken on the model b is short of", both(7, 5, 4, 4), both(3, 5, 4, 4), one(h200), h200, ""},
		{"taken on another, where a has its share", both(7, 5, 4, 4), both(3, 5, 4, 4), one(rtx), rtx,
			"queue a would fall below its deserved NVIDIA-GeForce-RTX-4090 share, 2 of 4|queue b would be above its deserved NVIDIA-GeForce-RTX-4090 share, 6 of 4"},
		{"taken on another, where a borrows and b has room in its share", both(7, 5, 8, 4), both(3, 5, 0, 4), one(rtx), rtx, ""},
		{"victims that also hold the other model, members on the short one", both(7, 5, 4, 4), both(3, 5, 4, 4),
			map[string]int64{h200: 1, rtx: 1}, h200, ""},
		{"members borrow idle cards of a model the victims do not hold", both(7, 5, 4, 4), both(3, 5, 4, 4), one(h200), rtx, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			usage := map[string]state.Usage{"a": tc.a, "b": tc.b}
			got := guard(pre, usage, members, victims(tc.victims), short, on(tc.lands))
			if tc.want == "" && got != "" || tc.want != "" && !slices.Contains(strings.Split(tc.want, "|"), got) {
				t.Errorf("guard %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAsksOf: a preemptor's missing min asks for the card models its pods
// may use: those its queue lists that match, narrowed by card-name.
func TestAsksOf(t *testing.T) {
	u := state.Usage{Cards: map[string]state.CardUsage{h200: {Listed: true}, rtx: {Listed: true}, "NVIDIA-B200": {}}}
	isCard := func(r corev1.ResourceName) bool { return r == "nvidia.com/gpu" }
	pods := []*corev1.Pod{
		builder.MakePod("ns", "p-0").GPU(2).Obj(),
		builder.MakePod("ns", "p-1").GPU(2).Obj(),
		builder.MakePod("ns", "p-2").GPU(2).Obj(),
	}
	a := asksOf(state.Preemptor{Pods: pods, Missing: 2}, u, isCard)
	if a.cards != 4 || !cmp.Equal(a.models, map[string]bool{h200: true, rtx: true}) {
		t.Errorf("asks %d cards of %v, want 4 of the listed H200 and RTX", a.cards, a.models)
	}
	named := builder.MakePod("ns", "named").GPU(1).CardName(rtx).Obj()
	a = asksOf(state.Preemptor{Pods: []*corev1.Pod{named}, Missing: 1}, u, isCard)
	if !cmp.Equal(a.models, map[string]bool{rtx: true}) {
		t.Errorf("a pod naming RTX asks for %v", a.models)
	}
}

// TestSettled: shares are judged as they will be once the preemptions
// under way are done, and what is free counts neither a victim's room,
// while it terminates, nor the room kept for a preemptor.
func TestSettled(t *testing.T) {
	cards := func(n int64) state.Charge {
		return state.Charge{Resources: quota.Resources{}, Cards: map[string]int64{h200: n}}
	}
	tests := []struct {
		name     string
		inFlight map[string]state.InFlight
		// want are a's and b's H200 after, and the H200 free.
		wantA, wantB, wantFree int64
	}{
		{"nothing under way", nil, 12, 2, 2},
		{"a gives 4 to b, on its victims' room", map[string]state.InFlight{"a": {Leaving: cards(4)}, "b": {Coming: cards(4)}}, 8, 6, 2},
		{"a gang of 8 of a leaves for 4 of b: the other 4 are not free while it terminates",
			map[string]state.InFlight{"a": {Leaving: cards(8)}, "b": {Coming: cards(4)}}, 4, 6, 2},
		{"the victims gone, their room kept for b", map[string]state.InFlight{"b": {Coming: cards(4), Beyond: cards(4)}}, 12, 6, -2},
		{"b's own pods leaving still count for b, not for a queue it would take from",
			map[string]state.InFlight{"a": {Leaving: cards(4)}, "b": {Leaving: cards(2), Coming: cards(1)}}, 8, 3, 2},
		{"a queue the state has no usage of", map[string]state.InFlight{"gone": {Coming: cards(1), Beyond: cards(1)}}, 12, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := cardsUsage(12, 8, true), cardsUsage(2, 8, true)
			usage := map[string]state.Usage{"a": a, "b": b}
			f := settled("b", quota.Resources{}, map[string]int64{h200: 16}, usage, tt.inFlight)
			if got := usage["a"].Cards[h200].Allocated; got != tt.wantA {
				t.Errorf("a's H200 after = %d, want %d", got, tt.wantA)
			}
			if got := usage["b"].Cards[h200].Allocated; got != tt.wantB {
				t.Errorf("b's H200 after = %d, want %d", got, tt.wantB)
			}
			if f.cards[h200] != tt.wantFree {
				t.Errorf("free H200 = %d, want %d", f.cards[h200], tt.wantFree)
			}
			if a.Cards[h200].Allocated != 12 {
				t.Errorf("the usage given was changed: a's H200 %d", a.Cards[h200].Allocated)
			}
		})
	}
}
