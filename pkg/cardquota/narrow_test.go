package cardquota

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

// TestNarrow: a pod with card-name alternatives is tried on the nodes of
// its first alternative that has quota and a node that looks to have room
// for it; every node when it names none, asks for two card resources, was
// nominated, missed before, or no alternative has such a node.
func TestNarrow(t *testing.T) {
	placed := func(node string, gpus int, cpu string) *corev1.Pod {
		p := builder.MakePod("ns", "on-"+node).GPU(gpus).Req(corev1.ResourceCPU, cpu).Obj()
		p.Spec.NodeName = node
		return p
	}
	tainted := builder.MakeNode("a-0").GPU(rtx, 4).Obj()
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := builder.MakeNode("a-0").GPU(rtx, 4).Obj()
	cordoned.Spec.Unschedulable = true
	preferring := func() *builder.PodWrapper {
		return builder.MakePod("ns", "p").GPU(1).Req(corev1.ResourceCPU, "1").CardName(rtx + "|" + rtxD)
	}
	both := map[string]state.CardUsage{rtx: {Listed: true, Capability: 8}, rtxD: {Listed: true, Capability: 8}}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		a0      *corev1.Node // default: a 4090 with 4 cards
		placed  []*corev1.Pod
		cards   map[string]state.CardUsage
		missed  bool
		refused bool
		more    int      // nodes the cycle has beyond these three; -1: only the two 4090s
		want    []string // nil: every node
	}{
		{name: "first alternative with room", pod: preferring().Obj(), want: []string{"a-0", "a-1"}},
		{name: "a node of it full of cards", pod: preferring().Obj(), placed: []*corev1.Pod{placed("a-0", 4, "1")}, want: []string{"a-1"}},
		{name: "every node of it full: the next alternative", pod: preferring().Obj(),
			placed: []*corev1.Pod{placed("a-0", 4, "1"), placed("a-1", 4, "1")}, want: []string{"b-0"}},
		{name: "no quota for the first", pod: preferring().Obj(),
			cards: map[string]state.CardUsage{rtx: {Listed: true, Capability: 1, Allocated: 1}, rtxD: {Listed: true, Capability: 8}}, want: []string{"b-0"}},
		{name: "no cpu left", pod: preferring().Obj(), placed: []*corev1.Pod{placed("a-0", 1, "32")}, want: []string{"a-1"}},
		{name: "untolerated taint", pod: preferring().Obj(), a0: tainted, want: []string{"a-1"}},
		{name: "tolerated taint", pod: func() *corev1.Pod {
			p := preferring().Obj()
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
			return p
		}(), a0: tainted, want: []string{"a-0", "a-1"}},
		{name: "cordoned", pod: preferring().Obj(), a0: cordoned, want: []string{"a-1"}},
		{name: "node selector", pod: preferring().NodeSelector(corev1.LabelHostname, "a-1").Obj(), want: []string{"a-1"}},
		{name: "no room anywhere", pod: preferring().Obj(),
			placed: []*corev1.Pod{placed("a-0", 4, "1"), placed("a-1", 4, "1"), placed("b-0", 4, "1")}},
		{name: "the first alternative's nodes are every node", pod: preferring().Obj(), more: -1},
		{name: "no memory left", pod: preferring().Req(corev1.ResourceMemory, "1Gi").Obj(),
			placed: []*corev1.Pod{func() *corev1.Pod {
				p := builder.MakePod("ns", "big").Req(corev1.ResourceMemory, "256Gi").Obj()
				p.Spec.NodeName = "a-0"
				return p
			}()}, want: []string{"a-1"}},
		{name: "no pod slot left", pod: preferring().Obj(), a0: builder.MakeNode("a-0").GPU(rtx, 4).Res(corev1.ResourcePods, "1").Obj(),
			placed: []*corev1.Pod{placed("a-0", 1, "1")}, want: []string{"a-1"}},
		{name: "untolerated NoExecute taint", pod: preferring().Obj(), a0: func() *corev1.Node {
			n := builder.MakeNode("a-0").GPU(rtx, 4).Obj()
			n.Spec.Taints = []corev1.Taint{{Key: "drain", Effect: corev1.TaintEffectNoExecute}}
			return n
		}(), want: []string{"a-1"}},
		{name: "PreferNoSchedule taint keeps nothing off", pod: preferring().Obj(), a0: func() *corev1.Node {
			n := builder.MakeNode("a-0").GPU(rtx, 4).Obj()
			n.Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
			return n
		}(), want: []string{"a-0", "a-1"}},
		{name: "a resource not asked for is not checked", pod: builder.MakePod("ns", "p").GPU(1).CardName(rtx + "|" + rtxD).Obj(),
			placed: []*corev1.Pod{placed("a-0", 1, "40")}, want: []string{"a-0", "a-1"}},
		{name: "names no model", pod: builder.MakePod("ns", "p").GPU(1).Obj()},
		{name: "asks for two card resources", pod: preferring().Extended("nvidia.com/mig-1g.18gb", 1).Obj()},
		{name: "bound (an in-place resize)", pod: func() *corev1.Pod {
			p := preferring().Obj()
			p.Spec.NodeName = "a-0"
			return p
		}()},
		{name: "refused by an earlier PreFilter", pod: preferring().Obj(), refused: true},
		{name: "missed before", pod: preferring().Obj(), missed: true},
		{name: "nominated", pod: func() *corev1.Pod {
			p := preferring().Obj()
			p.Status.NominatedNodeName = "a-1"
			return p
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a0 := tt.a0
			if a0 == nil {
				a0 = builder.MakeNode("a-0").GPU(rtx, 4).Obj()
			}
			nodes := []*corev1.Node{a0, builder.MakeNode("a-1").GPU(rtx, 4).Obj(), builder.MakeNode("b-0").GPU(rtxD, 4).Obj()}
			if tt.more < 0 {
				nodes = nodes[:2]
			}
			st := statetest.New()
			for _, n := range nodes {
				st.OnNode(n)
			}
			p := &Plugin{state: st, roomFirst: true}
			cards := tt.cards
			if cards == nil {
				cards = both
			}
			c := st.Prospect(tt.pod)
			c.NarrowMissed = tt.missed
			s := p.newStateData(c)
			s.cards = cards
			s.requests = newCardRequests(c.CardRequests)
			cs := framework.NewCycleState()
			if tt.refused {
				state.MarkRefusedAtPreFilter(cs)
			}
			got := p.narrow(cs, s, tt.pod, c, cache.NewSnapshot(tt.placed, nodes).NodeInfos(), len(nodes)+max(tt.more, 0))
			if tt.want == nil {
				if got != nil || s.narrowedTo != "" {
					t.Fatalf("narrowed to %v (%s), want every node", got.NodeNames, s.narrowedTo)
				}
				if st.AfterNarrowingMiss(cs, tt.pod, filteredOn("a-0")) != nil {
					t.Errorf("the cycle is marked narrowed")
				}
				return
			}
			if got == nil {
				t.Fatalf("every node, want %v", tt.want)
			}
			if diff := cmp.Diff(sets.New(tt.want...), got.NodeNames); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if st.AfterNarrowingMiss(cs, tt.pod, filteredOn("a-0")) == nil {
				t.Errorf("the cycle is not marked narrowed")
			}
		})
	}
}

// TestFitKeptRoom: room preemption keeps on a node for another preemptor
// is not room for the pod; its own preemptor's, or one whose member is
// already on the node, is.
func TestFitKeptRoom(t *testing.T) {
	pod := builder.MakePod("ns", "p").GPU(2).Obj()
	member := builder.MakePod("ns", "member").GPU(1).Obj()
	member.UID, member.Spec.NodeName = "member", "a-0"
	ni := cache.NewSnapshot([]*corev1.Pod{member}, []*corev1.Node{builder.MakeNode("a-0").GPU(rtx, 4).Obj()}).NodeInfos()
	node, err := ni.Get("a-0")
	if err != nil {
		t.Fatal(err)
	}
	keepIn := func(queue, key string, uid string, cards int64) state.Claim {
		return state.Claim{Key: key, Queue: queue, Pod: types.UID(uid), Node: "a-0", Request: quota.Resources{builder.GPUResource: cards}}
	}
	keep := func(key string, uid string, cards int64) state.Claim { return keepIn("q", key, uid, cards) }
	tests := []struct {
		name   string
		claims []state.Claim
		fits   bool
	}{
		{name: "nothing kept", fits: true},
		{name: "kept for another preemptor", claims: []state.Claim{keep("gang ns/other", "o-0", 2)}},
		{name: "kept for the pod's own", claims: []state.Claim{keep(state.PreemptorKeyFor("", pod), "p", 2)}, fits: true},
		{name: "kept for the pod's own in another queue", claims: []state.Claim{keepIn("other", state.PreemptorKeyFor("", pod), "p", 2)}},
		{name: "kept for a member already on it", claims: []state.Claim{keep("gang ns/other", "member", 2)}, fits: true},
		{name: "kept for a member not on it yet", claims: []state.Claim{keep("gang ns/other", "o-1", 2)}},
		{name: "less kept than left over", claims: []state.Claim{keep("gang ns/other", "o-0", 1)}, fits: true},
	}
	f := newFit(pod, newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 2})[0], state.PreemptorKeyFor("", pod), "q")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.fits(node, tt.claims); got != tt.fits {
				t.Errorf("fits %v, want %v", got, tt.fits)
			}
		})
	}
}

// filteredOn is the statuses of a cycle whose Filter refused node.
func filteredOn(node string) fwk.NodeToStatusReader {
	m := framework.NewDefaultNodeToStatus()
	m.Set(node, fwk.NewStatus(fwk.Unschedulable, "refused"))
	return m
}

// TestNarrowedScore: a cycle narrowed to one model's nodes scores none.
func TestNarrowedScore(t *testing.T) {
	p, _ := fixture(t)
	cs := framework.NewCycleState()
	cs.Write(stateKey, &stateData{names: []string{rtx, rtxD}, requests: newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 1}), narrowedTo: rtx})
	if st := p.PreScore(context.Background(), cs, nil, nil); st.Code() != fwk.Skip {
		t.Errorf("PreScore of a narrowed cycle: %v, want Skip", st)
	}
}
