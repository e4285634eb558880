package preemption

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

// placed builds a placed pod: name, queue, gang ("" for none), priority,
// preemptibility, elastic, rank, cards.
func placed(name, queue string, g gang.Key, priority int32, pr workload.Preemptibility, elastic bool, rank int, cards int64) state.PodView {
	return state.PodView{
		Pod:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}},
		Facts: state.Facts{Queue: queue, Gang: g, Priority: priority, Preemptibility: pr},
		Node:  "n", Elastic: elastic, Rank: rank,
		Cards: map[string]int64{"NVIDIA-H200": cards}, Bound: true,
	}
}

const (
	pre = workload.Preemptible
	non = workload.NonPreemptible
)

// unitNames lists units as "kind:pod,pod".
func unitNames(units []*unit) []string {
	var out []string
	for _, u := range units {
		s := u.kind.String() + ":"
		for i, p := range u.pods {
			if i > 0 {
				s += ","
			}
			s += p.Pod.Name
		}
		out = append(out, s)
	}
	return out
}

// TestUnits: who a preemptor of priority 500 in queue q may evict, grouped
// in the units they go in, most important first (SPEC §5.1-§5.4).
func TestUnits(t *testing.T) {
	preemptor := state.Preemptor{Key: "gang ns/p", Gang: "ns/p", Queue: "q", Priority: 500}
	tests := []struct {
		name string
		// priority is the preemptor's, when not 500.
		priority    int32
		reclaimFrom map[string]bool
		placed      []state.PodView
		want        []string
	}{
		{"in its queue: lower-priority preemptible pods, not higher, not equal, never non-preemptible", 0, nil, []state.PodView{
			placed("low", "q", "", 10, pre, false, 0, 1),
			placed("equal", "q", "", 500, pre, false, 0, 1),
			placed("high", "q", "", 1000, pre, false, 0, 1),
			placed("low-np", "q", "", 10, non, false, 0, 1),
		}, []string{"pod:low"}},
		{"in its queue: elastic pods of any priority, the newest first; never its own gang's", 0, nil, []state.PodView{
			placed("g-0", "q", "ns/g", 1000, pre, false, 0, 1),
			placed("g-1", "q", "ns/g", 1000, pre, true, 1, 1),
			placed("g-2", "q", "ns/g", 1000, pre, true, 2, 1),
			placed("p-3", "q", "ns/p", 10, pre, true, 3, 1),
		}, []string{"elastic pod:g-1", "elastic pod:g-2"}},
		{"a gang goes whole: its min members are one unit, after pods without a gang", 0, nil, []state.PodView{
			placed("g-0", "q", "ns/g", 10, pre, false, 0, 1),
			placed("g-1", "q", "ns/g", 10, pre, false, 1, 1),
			placed("g-2", "q", "ns/g", 10, pre, true, 2, 1),
			placed("solo", "q", "", 10, pre, false, 0, 1),
		}, []string{"gang:g-0,g-1", "pod:solo", "elastic pod:g-2"}},
		{"a gang with one non-preemptible member is not a victim; its preemptible elastic pods are", 0, nil, []state.PodView{
			placed("semi-0", "q", "ns/semi", 10, non, false, 0, 1),
			placed("semi-1", "q", "ns/semi", 10, non, false, 1, 1),
			placed("semi-2", "q", "ns/semi", 10, pre, true, 2, 1),
			placed("semi-3", "q", "ns/semi", 10, non, true, 3, 1),
		}, []string{"elastic pod:semi-2"}},
		{"a gang's priority is its highest member's", 0, nil, []state.PodView{
			placed("g-0", "q", "ns/g", 10, pre, false, 0, 1),
			placed("g-1", "q", "ns/g", 600, pre, false, 1, 1),
		}, nil},
		{"negative priorities: a gang of -20 and -10 has -10, below -5", -5, nil, []state.PodView{
			placed("g-0", "q", "ns/g", -20, pre, false, 0, 1),
			placed("g-1", "q", "ns/g", -10, pre, false, 1, 1),
		}, []string{"gang:g-0,g-1"}},
		{"other queues: none unless reclaimed from; elastic pods always; the rest where reclaimable, any priority", 0, map[string]bool{"open": true, "closed": false}, []state.PodView{
			placed("idle", "elsewhere", "", 10, pre, false, 0, 1),
			placed("open-high", "open", "", 1000, pre, false, 0, 1),
			placed("open-np", "open", "", 10, non, false, 0, 1),
			placed("closed-low", "closed", "", 10, pre, false, 0, 1),
			placed("closed-0", "closed", "ns/c", 1000, pre, false, 0, 1),
			placed("closed-1", "closed", "ns/c", 1000, pre, true, 1, 1),
		}, []string{"pod:open-high", "elastic pod:closed-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := preemptor
			if tc.priority != 0 {
				p.Priority = tc.priority
			}
			got := unitNames(eligibility{pre: p, reclaimFrom: tc.reclaimFrom}.units(tc.placed))
			if !cmp.Equal(got, tc.want) {
				t.Errorf("units %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnitsLeaveQueuesAtShare: pods of a queue reclaimed from that the
// guard would not let go are no victims; the preemptor's own queue is not
// asked.
func TestUnitsLeaveQueuesAtShare(t *testing.T) {
	asked := map[string]bool{}
	el := eligibility{pre: state.Preemptor{Queue: "q", Priority: 500}, reclaimFrom: map[string]bool{"other": true},
		atShare: func(q string, pods []state.PodView) bool {
			asked[q] = true
			return strings.HasPrefix(pods[0].Pod.Name, "kept")
		}}
	got := unitNames(el.units([]state.PodView{
		placed("kept-solo", "other", "", 10, pre, false, 0, 1),
		placed("taken-solo", "other", "", 10, pre, false, 0, 1),
		placed("taken-gang-0", "other", "ns/g", 10, pre, false, 0, 1),
		placed("taken-gang-1", "other", "ns/g", 10, pre, false, 1, 1),
		placed("kept-own", "q", "", 10, pre, false, 0, 1),
	}))
	if want := []string{"gang:taken-gang-0,taken-gang-1", "pod:kept-own", "pod:taken-solo"}; !cmp.Equal(got, want) {
		t.Errorf("units %v, want %v", got, want)
	}
	if asked["q"] {
		t.Errorf("asked whether its own queue is at its share")
	}

	// An elastic pod that may not go alone goes with its gang, and
	// shields nothing.
	got = unitNames(el.units([]state.PodView{
		placed("taken-0", "other", "ns/g", 10, pre, false, 0, 1),
		placed("taken-1", "other", "ns/g", 10, pre, true, 1, 1),
		placed("kept-2", "other", "ns/g", 10, pre, true, 2, 1),
	}))
	if want := []string{"gang:taken-0,kept-2", "elastic pod:taken-1"}; !cmp.Equal(got, want) {
		t.Errorf("units %v, want %v", got, want)
	}
}

// TestCostlier: of two plans, the one that puts less at stake (kind, then
// priority) is cheaper, then fewer gangs, cards, pods.
func TestCostlier(t *testing.T) {
	u := func(k kind, priority int32, cards int64) *unit {
		return &unit{kind: k, priority: priority, cards: cards, pods: make([]state.PodView, cards)}
	}
	tests := []struct {
		name string
		a, b []*unit
		want bool
	}{
		{"three gangs over one", []*unit{u(wholeGang, 0, 8), u(wholeGang, 0, 8), u(wholeGang, 0, 8)}, []*unit{u(wholeGang, 0, 8)}, true},
		{"one gang over three", []*unit{u(wholeGang, 0, 8)}, []*unit{u(wholeGang, 0, 8), u(wholeGang, 0, 8), u(wholeGang, 0, 8)}, false},
		{"one higher-priority gang over two lower", []*unit{u(wholeGang, 100, 64)}, []*unit{u(wholeGang, 0, 2), u(wholeGang, 0, 2)}, true},
		{"a gang over elastic pods", []*unit{u(wholeGang, 0, 1)}, []*unit{u(elasticPod, 0, 4), u(elasticPod, 0, 4)}, true},
		{"more cards, same gangs", []*unit{u(wholeGang, 0, 8)}, []*unit{u(wholeGang, 0, 4)}, true},
		{"the same", []*unit{u(wholeGang, 0, 8)}, []*unit{u(wholeGang, 0, 8)}, false},
		{"two high over a high and a low, fewer cards", []*unit{u(wholeGang, 100, 8), u(wholeGang, 100, 8)}, []*unit{u(wholeGang, 100, 16), u(wholeGang, 0, 16)}, true},
		{"a high and a low over a high and a lower", []*unit{u(wholeGang, 100, 8), u(wholeGang, 50, 8)}, []*unit{u(wholeGang, 100, 8), u(wholeGang, 0, 8)}, true},
		{"nothing over a negative-priority elastic pod", nil, []*unit{u(elasticPod, -10, 1)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := costlier(tc.a, tc.b); got != tc.want {
				t.Errorf("costlier %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnitsParent: a gang's elastic pods know their gang's unit, so
// evicting the gang takes them too and no elastic pod is left without its
// min.
func TestUnitsParent(t *testing.T) {
	units := eligibility{pre: state.Preemptor{Queue: "q", Priority: 500}}.units([]state.PodView{
		placed("g-0", "q", "ns/g", 10, pre, false, 0, 1),
		placed("g-1", "q", "ns/g", 10, pre, true, 1, 1),
	})
	if len(units) != 2 || units[1].parent != units[0] {
		t.Fatalf("units %v: want the elastic pod's parent to be its gang", unitNames(units))
	}
	units = eligibility{pre: state.Preemptor{Queue: "q", Priority: 5}}.units([]state.PodView{
		placed("g-0", "q", "ns/g", 10, pre, false, 0, 1),
		placed("g-1", "q", "ns/g", 10, pre, true, 1, 1),
	})
	if len(units) != 1 || units[0].parent != nil {
		t.Fatalf("units %v: an elastic pod whose gang may not go has no parent", unitNames(units))
	}
}

// TestMoreImportant: the order units are spared in, most important first.
func TestMoreImportant(t *testing.T) {
	u := func(name string, k kind, priority int32, g gang.Key, rank int, cards int64, pods int) *unit {
		out := &unit{kind: k, priority: priority, gang: g, rank: rank, cards: cards}
		for i := range pods {
			out.pods = append(out.pods, placed(fmt.Sprintf("%s-%d", name, i), "q", g, priority, pre, false, 0, 1))
		}
		return out
	}
	evicted := func(x *unit, times int) *unit { x.timesEvicted = times; return x }
	tests := []struct {
		name string
		a, b *unit
	}{
		{"a gang before a pod", u("g", wholeGang, 10, "ns/g", 0, 1, 1), u("p", singlePod, 1000, "", 0, 1, 1)},
		{"a pod before an elastic pod", u("p", singlePod, 10, "", 0, 1, 1), u("e", elasticPod, 1000, "ns/g", 1, 1, 1)},
		{"higher priority first", u("h", singlePod, 20, "", 0, 1, 1), u("l", singlePod, 10, "", 0, 8, 1)},
		{"the older elastic pod of a gang first", u("e1", elasticPod, 10, "ns/g", 1, 1, 1), u("e2", elasticPod, 10, "ns/g", 2, 8, 1)},
		{"more cards first", u("big", singlePod, 10, "", 0, 4, 1), u("small", singlePod, 10, "", 0, 1, 1)},
		{"more pods first", u("two", wholeGang, 10, "ns/a", 0, 2, 2), u("one", wholeGang, 10, "ns/b", 0, 2, 1)},
		{"a gang evicted more often first", evicted(u("z", wholeGang, 10, "ns/z", 0, 2, 1), 2), evicted(u("a", wholeGang, 10, "ns/a", 0, 2, 1), 1)},
		{"then by name", u("a", singlePod, 10, "", 0, 1, 1), u("b", singlePod, 10, "", 0, 1, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !moreImportant(tc.a, tc.b) || moreImportant(tc.b, tc.a) {
				t.Errorf("want %v before %v, strictly", unitNames([]*unit{tc.a}), unitNames([]*unit{tc.b}))
			}
		})
	}
}
