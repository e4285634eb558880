package cardquota

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
	"cardinal.dev/cardinal/test/statetest"
)

const (
	rtx  = "NVIDIA-GeForce-RTX-4090"
	rtxD = "NVIDIA-GeForce-RTX-4090-D"
)

func nodeInfo(n *corev1.Node) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

// fixture is a plugin over a state that knows three nodes: a 4090, a
// 4090-D and one whose GPUs have no product label.
func fixture(t *testing.T) (*Plugin, map[string]fwk.NodeInfo) {
	t.Helper()
	st := statetest.New()
	nodes := map[string]fwk.NodeInfo{}
	for _, n := range []*corev1.Node{
		builder.MakeNode("n-4090").GPU(rtx, 4).Obj(),
		builder.MakeNode("n-4090d").GPU(rtxD, 4).Obj(),
		builder.MakeNode("n-plain").Res(builder.GPUResource, "4").Obj(),
	} {
		st.OnNode(n)
		nodes[n.Name] = nodeInfo(n)
	}
	return &Plugin{state: st, roomFirst: true}, nodes
}

func TestFilter(t *testing.T) {
	quota := map[string]state.CardUsage{
		rtx:  {Listed: true, Guarantee: 1, Capability: 2, Allocated: 1},
		rtxD: {Listed: true, Guarantee: 2, Capability: 2, Allocated: 2},
	}
	gpu1 := newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 1})
	tests := []struct {
		name  string
		state stateData
		node  string
		want  string // "" = fits; else part of the message
		code  fwk.Code
	}{
		{name: "listed model with room", state: stateData{queue: "a", requests: gpu1, cards: quota}, node: "n-4090"},
		{name: "listed model without room", state: stateData{queue: "a", requests: gpu1, cards: quota}, node: "n-4090d",
			want: "queue a has insufficient NVIDIA-GeForce-RTX-4090-D quota: requested 1, would use 3, capability 2", code: fwk.Unschedulable},
		{name: "model not among the pod's alternatives", state: stateData{queue: "a", requests: gpu1, names: []string{rtxD}, cards: quota}, node: "n-4090",
			want: "node n-4090 has NVIDIA-GeForce-RTX-4090, which is not among the pod's card models NVIDIA-GeForce-RTX-4090-D", code: fwk.UnschedulableAndUnresolvable},
		{name: "model the queue does not list", state: stateData{queue: "b", requests: gpu1, cards: map[string]state.CardUsage{}}, node: "n-4090",
			want: "queue b has no quota for card model NVIDIA-GeForce-RTX-4090", code: fwk.Unschedulable},
		{name: "non-preemptible beyond the guarantee", state: stateData{queue: "a", nonPreemptible: true, requests: gpu1,
			cards: map[string]state.CardUsage{rtx: {Listed: true, Guarantee: 1, Capability: 4, Allocated: 1, NonPreemptible: 1}}}, node: "n-4090",
			want: "queue a: non-preemptible pods may use only its guarantee of NVIDIA-GeForce-RTX-4090: requested 1, would use 2, guarantee 1", code: fwk.Unschedulable},
		{name: "unlabelled node serves a pod that names no model", state: stateData{queue: "a", requests: gpu1, cards: quota}, node: "n-plain"},
		{name: "unlabelled node refuses a pod that names one", state: stateData{queue: "a", requests: gpu1, names: []string{rtx}, cards: quota}, node: "n-plain",
			want: "node n-plain's cards have no model", code: fwk.UnschedulableAndUnresolvable},
		{name: "requested resource the node does not carry as cards", state: stateData{queue: "a", requests: newCardRequests(map[corev1.ResourceName]int64{"nvidia.com/mig-1g.18gb": 1}), names: []string{"X/mig-1g.18gb-mixed"}, cards: quota}, node: "n-4090",
			want: "node n-4090 has none of the pod's card models X/mig-1g.18gb-mixed", code: fwk.UnschedulableAndUnresolvable},
	}
	p, nodes := fixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := framework.NewCycleState()
			s := tt.state
			cs.Write(stateKey, &s)
			st := p.Filter(context.Background(), cs, nil, nodes[tt.node])
			if tt.want == "" {
				if !st.IsSuccess() {
					t.Fatalf("want the pod to fit, got %v", st)
				}
				return
			}
			if st.Code() != tt.code || !strings.Contains(st.Message(), tt.want) {
				t.Fatalf("got %v %q, want %v containing %q", st.Code(), st.Message(), tt.code, tt.want)
			}
		})
	}
}

// TestFilterRoom: Filter refuses a node with too few of the pod's cards
// left, as NodeResourcesFit would, whether or not PreFilter found that every
// model passes; nodes without the resource, and bound pods, are left to
// NodeResourcesFit, and so is everything when it ignores some resource.
func TestFilterRoom(t *testing.T) {
	room := map[string]state.CardUsage{rtx: {Listed: true, Capability: 8}}
	gpus := func(n int64) cardRequests {
		return newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: n})
	}
	used := builder.MakePod("ns", "used").GPU(3).Obj()
	full := framework.NewNodeInfo(used)
	full.SetNode(builder.MakeNode("n-4090").GPU(rtx, 4).Obj())
	cpuOnly := nodeInfo(builder.MakeNode("n-cpu").Obj())
	overcommitted := framework.NewNodeInfo(used)
	overcommitted.SetNode(builder.MakeNode("n-4090").GPU(rtx, 2).Obj())
	tests := []struct {
		name      string
		state     stateData
		node      fwk.NodeInfo
		bound     bool
		fitIgnore bool
		want      string
		code      fwk.Code
	}{
		{name: "room for one more", state: stateData{queue: "a", requests: gpus(1), cards: room}, node: full},
		{name: "too few left", state: stateData{queue: "a", requests: gpus(2), cards: room}, node: full, want: "Insufficient nvidia.com/gpu", code: fwk.Unschedulable},
		{name: "too few left, every model passing", state: stateData{queue: "a", requests: gpus(2), cards: room, everyNode: true}, node: full, want: "Insufficient nvidia.com/gpu", code: fwk.Unschedulable},
		{name: "more than the node has in all: no preemption helps", state: stateData{queue: "a", requests: gpus(5), cards: room}, node: full, want: "Insufficient nvidia.com/gpu", code: fwk.UnschedulableAndUnresolvable},
		{name: "a request of 0 on a node over-committed (a card gone unhealthy)", state: stateData{queue: "a", requests: gpus(0), cards: room}, node: overcommitted},
		{name: "node without the resource: NodeResourcesFit's to say", state: stateData{queue: "a", requests: gpus(2), cards: room, everyNode: true}, node: cpuOnly},
		{name: "bound pod resized in place", state: stateData{queue: "a", requests: gpus(2), cards: room}, node: full, bound: true},
		{name: "NodeResourcesFit ignores resources", state: stateData{queue: "a", requests: gpus(2), cards: room}, node: full, fitIgnore: true},
	}
	p, _ := fixture(t)
	p.state.OnNode(cpuOnly.Node())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.roomFirst = !tt.fitIgnore
			pod := builder.MakePod("ns", "p").GPU(2).Obj()
			if tt.bound {
				pod.Spec.NodeName = "n-4090"
			}
			cs := framework.NewCycleState()
			s := tt.state
			cs.Write(stateKey, &s)
			st := p.Filter(context.Background(), cs, pod, tt.node)
			if tt.want == "" {
				if !st.IsSuccess() {
					t.Fatalf("want the pod to fit, got %v", st)
				}
				return
			}
			if st.Code() != tt.code || st.Message() != tt.want {
				t.Fatalf("got %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.want)
			}
		})
	}
}

// TestRoomOfTwoResources: with two card resources, a node is refused as
// unresolvable when it has too few of either in all, whichever comes first,
// as NodeResourcesFit refuses it.
func TestRoomOfTwoResources(t *testing.T) {
	const a, b corev1.ResourceName = "example.com/a", "example.com/b"
	used := builder.MakePod("ns", "used").Extended(a, 3).Obj()
	node := framework.NewNodeInfo(used)
	node.SetNode(builder.MakeNode("n").Res(a, "4").Res(b, "2").Obj())
	tests := []struct {
		name     string
		requests map[corev1.ResourceName]int64
		want     string
		code     fwk.Code
	}{
		{"both fit", map[corev1.ResourceName]int64{a: 1, b: 2}, "", fwk.Success},
		{"first too few left", map[corev1.ResourceName]int64{a: 2, b: 1}, "Insufficient example.com/a", fwk.Unschedulable},
		{"first too few left, second too few in all", map[corev1.ResourceName]int64{a: 2, b: 3}, "Insufficient example.com/b", fwk.UnschedulableAndUnresolvable},
		{"first too few in all", map[corev1.ResourceName]int64{a: 5, b: 1}, "Insufficient example.com/a", fwk.UnschedulableAndUnresolvable},
	}
	p := &Plugin{roomFirst: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stateData{requests: newCardRequests(tt.requests)}
			st := p.room(s, builder.MakePod("ns", "p").Obj(), node, node.GetAllocatable().GetScalarResources())
			if st.Code() != tt.code || tt.want != "" && st.Message() != tt.want {
				t.Fatalf("got %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.want)
			}
		})
	}
}

// TestPassesEveryNode: PreFilter lets Filter pass every node without
// looking it up exactly when Filter would pass every node that carries the
// pod's card resource, and the shortcut ends once the numbers are adjusted.
func TestPassesEveryNode(t *testing.T) {
	room := state.CardUsage{Listed: true, Capability: 4}
	full := state.CardUsage{Listed: true, Capability: 1, Allocated: 1}
	gpu1 := newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 1})
	tests := []struct {
		name  string
		state stateData
		want  bool
	}{
		{"any model, both with room", stateData{requests: gpu1, cards: map[string]state.CardUsage{rtx: room, rtxD: room}}, true},
		{"any model, one full", stateData{requests: gpu1, cards: map[string]state.CardUsage{rtx: room, rtxD: full}}, false},
		{"any model, one not listed", stateData{requests: gpu1, cards: map[string]state.CardUsage{rtx: room}}, false},
		{"names both, unlabelled node refuses", stateData{requests: gpu1, names: []string{rtx, rtxD}, cards: map[string]state.CardUsage{rtx: room, rtxD: room}}, false},
		{"names one of two models", stateData{requests: gpu1, names: []string{rtx}, cards: map[string]state.CardUsage{rtx: room, rtxD: room}}, false},
		{"resource no node carries as cards", stateData{requests: newCardRequests(map[corev1.ResourceName]int64{"nvidia.com/mig-1g.18gb": 1})}, true},
		{"names a model of a vendor resource one node has unlabelled", stateData{requests: newCardRequests(map[corev1.ResourceName]int64{"example.com/fpga": 1}), names: []string{"Example-F1"},
			cards: map[string]state.CardUsage{"Example-F1": room}}, false},
	}
	p, nodes := fixture(t)
	// A vendor's resource learned as cards from one node's product label,
	// which another node has unlabelled.
	for _, n := range []*corev1.Node{
		builder.MakeNode("n-fpga").Res("example.com/fpga", "2").Label("example.com/fpga.product", "Example-F1").Obj(),
		builder.MakeNode("n-fpga-unlabelled").Res("example.com/fpga", "2").Obj(),
	} {
		p.state.OnNode(n)
		nodes[n.Name] = nodeInfo(n)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.state
			if got := p.passesEveryNode(&s, len(nodes)); got != tt.want {
				t.Fatalf("passesEveryNode = %v, want %v", got, tt.want)
			}
			// What Filter says of every node that carries the resource.
			cs := framework.NewCycleState()
			cs.Write(stateKey, &s)
			every := true
			for _, ni := range nodes {
				carries := false
				for _, rq := range s.requests {
					_, carries = ni.Node().Status.Allocatable[rq.resource]
				}
				if carries && !p.Filter(context.Background(), cs, nil, ni).IsSuccess() {
					every = false
				}
			}
			if every != tt.want {
				t.Errorf("Filter passes every node carrying the resource: %v, but passesEveryNode = %v", every, tt.want)
			}
		})
	}

	t.Run("a labelled node with no cards allocatable beside an unlabelled one", func(t *testing.T) {
		st := statetest.New()
		st.OnNode(builder.MakeNode("restarting").GPU(rtx, 0).Obj())
		st.OnNode(builder.MakeNode("unlabelled").Res(builder.GPUResource, "8").Obj())
		q := &Plugin{state: st}
		s := stateData{requests: gpu1, names: []string{rtx}, cards: map[string]state.CardUsage{rtx: room}}
		if q.passesEveryNode(&s, 2) {
			t.Errorf("passesEveryNode with an unlabelled node that would refuse a pod naming %s", rtx)
		}
	})

	t.Run("a node the state has not seen yet", func(t *testing.T) {
		s := stateData{requests: gpu1, names: []string{rtx, rtxD}, cards: map[string]state.CardUsage{rtx: room, rtxD: room}}
		if p.passesEveryNode(&s, len(nodes)+1) {
			t.Errorf("passesEveryNode with a node in the snapshot the state has not seen")
		}
	})

	t.Run("adjusted numbers are filtered again", func(t *testing.T) {
		victim := builder.MakePod("ns", "other").Label(v1alpha1.QueueLabel, "a").GPU(1).Obj()
		victim.UID = "other"
		victim.Spec.NodeName = "n-4090"
		p.state.OnPod(victim)
		s := &stateData{queue: "a", requests: gpu1, cards: map[string]state.CardUsage{rtx: {Listed: true, Capability: 2, Allocated: 1}}, everyNode: true, nodesGen: p.state.NodesGeneration()}
		cs := framework.NewCycleState()
		cs.Write(stateKey, s)
		if st := p.Filter(context.Background(), cs, nil, nodes["n-4090d"]); !st.IsSuccess() {
			t.Fatalf("unadjusted: Filter %v, want the shortcut's success", st)
		}
		pi, _ := framework.NewPodInfo(victim)
		p.AddPod(context.Background(), cs, nil, pi, nodes["n-4090"])
		if st := p.Filter(context.Background(), cs, nil, nodes["n-4090"]); st.IsSuccess() {
			t.Errorf("after AddPod filled the quota, Filter still passes")
		}
	})
}

// TestScorePrefersEarlierAlternatives: the first alternative scores
// highest, whether Score reads whole cards' models off the node's labels
// (after PreScore) or looks the node up in the state.
func TestScorePrefersEarlierAlternatives(t *testing.T) {
	p, nodes := fixture(t)
	for _, preScore := range []bool{false, true} {
		cs := framework.NewCycleState()
		cs.Write(stateKey, &stateData{requests: newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 1}), names: []string{rtx, rtxD}})
		if preScore {
			if st := p.PreScore(context.Background(), cs, nil, nil); !st.IsSuccess() {
				t.Fatal(st)
			}
			if s, _ := getState(cs); len(s.productLabels) != 1 {
				t.Fatalf("PreScore noted labels %v, want the GPU's product label", s.productLabels)
			}
		}
		got := map[string]int64{}
		for name, ni := range nodes {
			s, st := p.Score(context.Background(), cs, nil, ni)
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			got[name] = s
		}
		want := map[string]int64{"n-4090": fwk.MaxNodeScore, "n-4090d": fwk.MaxNodeScore / 2, "n-plain": 0}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PreScore %v: scores (-want, +got):\n%s", preScore, diff)
		}
	}
}

// TestSimulationMirrors: AddPod and RemovePod change only the cycle's clone,
// by exactly what the other pod is charged.
func TestSimulationMirrors(t *testing.T) {
	p, nodes := fixture(t)
	victim := builder.MakePod("ns", "victim").Label(v1alpha1.QueueLabel, "a").GPU(2).Obj()
	victim.UID = "victim"
	victim.Spec.NodeName = "n-4090"
	p.state.OnPod(victim)
	orig := &stateData{queue: "a", cards: map[string]state.CardUsage{rtx: {Listed: true, Capability: 4, Allocated: 2}}}
	cs := framework.NewCycleState()
	cs.Write(stateKey, orig)
	clone := cs.Clone()
	pi, _ := framework.NewPodInfo(victim)
	if st := p.RemovePod(context.Background(), clone, nil, pi, nodes["n-4090"]); !st.IsSuccess() {
		t.Fatal(st)
	}
	s, _ := getState(clone)
	if got := s.cards[rtx].Allocated; got != 0 {
		t.Errorf("after RemovePod the clone has %d allocated, want 0", got)
	}
	if got := orig.cards[rtx].Allocated; got != 2 {
		t.Errorf("RemovePod changed the original: %d allocated, want 2", got)
	}
	if st := p.AddPod(context.Background(), clone, nil, pi, nodes["n-4090"]); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := s.cards[rtx].Allocated; got != 2 {
		t.Errorf("after AddPod the clone has %d allocated, want 2", got)
	}
}

func TestShortfall(t *testing.T) {
	cards := map[string]state.CardUsage{
		rtx:  {Listed: true, Capability: 1, Allocated: 0},
		rtxD: {Listed: true, Capability: 2, Allocated: 1},
	}
	both := []string{rtx, rtxD}
	tests := []struct {
		name  string
		reqs  []cardmodel.Request
		freed map[string]int64
		want  string
	}{
		{name: "fits across alternatives", reqs: []cardmodel.Request{{Models: both, Count: 2}}},
		{name: "too many", reqs: []cardmodel.Request{{Models: both, Count: 3}},
			want: "queue a has insufficient NVIDIA-GeForce-RTX-4090|NVIDIA-GeForce-RTX-4090-D quota: requested 3, would use 4, capability 3"},
		{name: "elastic pods freed", reqs: []cardmodel.Request{{Models: both, Count: 3}}, freed: map[string]int64{rtxD: 1}},
		{name: "requests share room", reqs: []cardmodel.Request{{Models: []string{rtx}, Count: 1}, {Models: both, Count: 2}},
			want: "requested 2, would use 3, capability 3"},
		{name: "model not listed", reqs: []cardmodel.Request{{Models: []string{"NVIDIA-H200"}, Count: 1}},
			want: "queue a has insufficient NVIDIA-H200 quota: requested 1, would use 1, capability 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if r := shortfall("a", tt.reqs, cards, tt.freed); r != nil {
				got = r.String()
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("shortfall = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGangRequests: a gang's card request is shared over its min members,
// and what the missing ones need is their share rounded down: admission
// never holds a gang whose missing pods may be the small ones (5 cards
// over 2 pods: the missing pod may need 2).
func TestGangRequests(t *testing.T) {
	c := state.PodView{Facts: state.Facts{Queue: "a"}}
	pg := builder.MakePodGroup("ns", "g", 2).Annotation(v1alpha1.CardRequestAnnotation, `{"NVIDIA-H200":5}`).Obj()
	tests := []struct {
		missing int
		want    int64
	}{{2, 5}, {1, 2}, {0, 0}}
	for _, tt := range tests {
		reqs, invalid := gangRequests(c, pg, tt.missing, nil)
		if invalid != nil || len(reqs) != 1 || reqs[0].Count != tt.want {
			t.Errorf("missing %d: %v %v, want %d cards", tt.missing, reqs, invalid, tt.want)
		}
	}
	pg.Annotations[v1alpha1.CardRequestAnnotation] = "{"
	if _, invalid := gangRequests(c, pg, 1, nil); invalid == nil || invalid.Object != "PodGroup ns/g" {
		t.Errorf("an unreadable card request: %v, want it named", invalid)
	}
}

// TestGuaranteeShortfall: a non-preemptible min fits only the guarantee
// its models have left beyond their non-preemptible use (SPEC §3.5),
// whatever capability is left; alternatives share it in order.
func TestGuaranteeShortfall(t *testing.T) {
	cards := map[string]state.CardUsage{
		rtx:  {Listed: true, Guarantee: 2, Capability: 8, Allocated: 6, NonPreemptible: 1},
		rtxD: {Listed: true, Guarantee: 1, Capability: 8, Allocated: 1, NonPreemptible: 1},
	}
	c := state.PodView{Facts: state.Facts{Queue: "a", Preemptibility: workload.NonPreemptible}, NonPreemptible: true}
	tests := []struct {
		name string
		reqs []cardmodel.Request
		want string
	}{
		{name: "within what the guarantee has left", reqs: []cardmodel.Request{{Models: []string{rtx}, Count: 1}}},
		{name: "beyond it, though capability is left", reqs: []cardmodel.Request{{Models: []string{rtx, rtxD}, Count: 2}},
			want: "gang ns/g is held: it is non-preemptible and its min needs 2 more pods; queue a guarantees NVIDIA-GeForce-RTX-4090|NVIDIA-GeForce-RTX-4090-D 3 and non-preemptible pods would use 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if r := guaranteeShortfall("ns/g", c, 2, tt.reqs, cards); r != nil {
				got = r.String()
			}
			if got != tt.want {
				t.Errorf("guaranteeShortfall = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFilterNodeNotSeenYet: a node kube-scheduler's snapshot has but the
// state's informer has not delivered (or not its cards: re-sliced) has no
// known models for the pod, so no quota check could be made: Filter
// refuses it, for any pod, and the node's arrival wakes the pod.
func TestFilterNodeNotSeenYet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		everyNode bool
		seen      *corev1.Node // what the state saw of the node before, if anything
	}{
		{"looked up", false, nil},
		{"every node passed PreFilter", true, nil},
		{"re-sliced from MIG, the state behind", true,
			builder.MakeNode("n-late").Res("nvidia.com/mig-1g.18gb", "7").Label("nvidia.com/gpu.product", "NVIDIA-H200").Obj()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := fixture(t)
			if tc.seen != nil {
				p.state.OnNode(tc.seen)
				p.state.Flush(&fake.Framework{})
			}
			late := builder.MakeNode("n-late").GPU("NVIDIA-H200", 4).Obj()
			pod := builder.MakePod("ns", "p").GPU(1).Obj()
			pod.UID = "p"
			s := &stateData{queue: "a", requests: newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 1}), cards: map[string]state.CardUsage{},
				waits: &atomic.Bool{}, everyNode: tc.everyNode, nodesGen: p.state.NodesGeneration()}
			cs := framework.NewCycleState()
			cs.Write(stateKey, s)
			st := p.Filter(context.Background(), cs, pod, nodeInfo(late))
			if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "node n-late's card models are not known to Cardinal yet") {
				t.Fatalf("Filter on a node not seen yet = %v", st)
			}
			fw := &fake.Framework{}
			p.state.OnNode(late)
			p.state.Flush(fw)
			if !cmp.Equal(fw.Activated(), []string{"ns/p"}) {
				t.Errorf("woken when the node arrived: %v, want [ns/p]", fw.Activated())
			}
			// Now known: an H200 the queue has no quota for, which what
			// PreFilter found of every node before it arrived does not cover.
			if st := p.Filter(context.Background(), cs, pod, nodeInfo(late)); !strings.Contains(st.Message(), "queue a has no quota for card model NVIDIA-H200") {
				t.Errorf("Filter once the node is known = %v", st)
			}
		})
	}
}

// TestFilterNodeChangedMidCycle: Filter reads the node models PreFilter
// took while no node has changed since; a node relabelled after PreFilter
// is judged by its new model, the one Reserve would charge.
func TestFilterNodeChangedMidCycle(t *testing.T) {
	p, nodes := fixture(t)
	p.state.OnQueue(builder.MakeQueue("default").Card(rtx, 0, 8).Card(rtxD, 0, 8).Obj())
	pod := builder.MakePod("ns", "p").GPU(1).CardName(rtx + "|" + rtxD).Obj()
	pod.UID = "p"
	cs := framework.NewCycleState()
	all := []fwk.NodeInfo{nodes["n-4090"], nodes["n-4090d"], nodes["n-plain"]}
	if _, st := p.PreFilter(context.Background(), cs, pod, all); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := p.Filter(context.Background(), cs, pod, nodes["n-4090"]); !st.IsSuccess() {
		t.Fatalf("before the relabel: %v", st)
	}
	p.state.OnNode(builder.MakeNode("n-4090").GPU("NVIDIA-A100", 4).Obj())
	st := p.Filter(context.Background(), cs, pod, nodes["n-4090"])
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "has NVIDIA-A100, which is not among the pod's card models") {
		t.Errorf("after the relabel: %v, want the node refused for its new model", st)
	}
}
