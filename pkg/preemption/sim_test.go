package preemption

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"
	schedulernames "k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

// node is a node of the tests' copies of the cluster: its cards, its room
// for pods, and the GPUs of the pods on it, the first victims of them
// those a plan may evict.
type node struct {
	name    string
	gpus    int   // 0: no card resource at all
	maxPods int   // 0: 110
	pods    []int // GPUs of each pod on it
	victims int   // how many of pods, from the first, units hold
}

// simOf builds a sim over nodes and the units holding their victims.
func simOf(t *testing.T, r *reach, nodes ...node) (*sim, []*unit) {
	t.Helper()
	s := &sim{reach: r, nodes: map[string]fwk.NodeInfo{}, victims: map[types.UID]fwk.PodInfo{}}
	var units []*unit
	for _, n := range nodes {
		nb := builder.MakeNode(n.name)
		if n.gpus > 0 {
			nb.GPU("NVIDIA-H200", n.gpus)
		}
		if n.maxPods > 0 {
			nb.Res(corev1.ResourcePods, fmt.Sprint(n.maxPods))
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(nb.Obj())
		for i, gpus := range n.pods {
			pod := builder.MakePod("ns", fmt.Sprintf("%s-%d", n.name, i)).GPU(gpus).Obj()
			pod.UID = types.UID(pod.Name)
			pod.Spec.NodeName = n.name
			ni.AddPod(pod)
			if i < n.victims {
				units = append(units, &unit{kind: singlePod, pods: []state.PodView{{Pod: pod, Node: n.name}}})
			}
		}
		s.nodes[n.name] = ni
	}
	return s, units
}

// membersAsking are n members asking for gpus each, shaped alike (key).
func membersAsking(t *testing.T, n, gpus int, key string) []*member {
	t.Helper()
	out := make([]*member, 0, n)
	for i := range n {
		pod := builder.MakePod("ns", fmt.Sprintf("m-%d", i)).GPU(gpus).Obj()
		info, err := framework.NewPodInfo(pod)
		if err != nil {
			t.Fatal(err)
		}
		m := &member{pod: pod, info: info, key: key, st: &shape{}}
		if gpus > 0 {
			m.need = []need{{builder.GPUResource, int64(gpus)}}
		}
		out = append(out, m)
	}
	return out
}

func isGPU(name corev1.ResourceName) bool { return name == builder.GPUResource }

// TestRoomFor: NodeResourcesFit's arithmetic over what is left and what
// the victims free bounds how many members fit, and says nothing when it
// cannot be sure.
func TestRoomFor(t *testing.T) {
	full8 := []int{4, 4}
	tests := []struct {
		name    string
		unknown bool // nothing is known to check the arithmetic
		nodes   []node
		want    int // members wanted
		gpus    int
		key     string // of the members; "" is the cycle pod's
		n       int
		ok      bool
		skipped []string
	}{
		{name: "victims free two members' room", nodes: []node{{name: "a", gpus: 8, pods: full8, victims: 2}, {name: "b", gpus: 8, pods: full8}},
			want: 2, gpus: 4, n: 2, ok: true},
		{name: "not three: the other node stays full", nodes: []node{{name: "a", gpus: 8, pods: full8, victims: 2}, {name: "b", gpus: 8, pods: full8}},
			want: 3, gpus: 4, n: 2, ok: true},
		{name: "free room and freed room add up", nodes: []node{{name: "a", gpus: 8, pods: []int{4, 2}, victims: 1}, {name: "b", gpus: 8, pods: []int{4}}},
			want: 3, gpus: 4, n: 2, ok: true},
		{name: "exactly full: no room without victims", nodes: []node{{name: "a", gpus: 8, pods: full8}},
			want: 1, gpus: 1, n: 0, ok: true},
		{name: "a skipped node's room does not count", nodes: []node{{name: "a", gpus: 8, pods: full8, victims: 2}, {name: "b", gpus: 8}},
			want: 2, gpus: 8, n: 1, ok: true, skipped: []string{"b"}},
		{name: "room for pods is room too", nodes: []node{{name: "a", gpus: 8, maxPods: 2, pods: []int{1, 1}}},
			want: 1, gpus: 1, n: 0, ok: true},
		{name: "members shaped otherwise: cannot say", nodes: []node{{name: "a", gpus: 8, pods: full8}},
			want: 1, gpus: 1, key: "other"},
		{name: "a node without the resource: cannot say", nodes: []node{{name: "a", gpus: 8, pods: full8}, {name: "cpu"}},
			want: 1, gpus: 1},
		{name: "a node without the resource hides no room found elsewhere", nodes: []node{{name: "a", gpus: 8}, {name: "cpu"}},
			want: 1, gpus: 1, n: 1, ok: true},
		{name: "arithmetic not known to be checked: cannot say", unknown: true, nodes: []node{{name: "a", gpus: 8, pods: full8}},
			want: 1, gpus: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := reach{key: "cycle", cards: isGPU}
			if tc.unknown {
				r.cards = nil
			}
			key := tc.key
			if key == "" {
				key = r.key
			}
			s, units := simOf(t, &r, tc.nodes...)
			members := membersAsking(t, tc.want, tc.gpus, key)
			if len(tc.skipped) > 0 {
				skip := map[string]bool{}
				for _, n := range tc.skipped {
					skip[n] = true
				}
				for _, m := range members {
					m.st.skip = skip
				}
			}
			n, ok := s.roomFor(tc.want, members, units)
			if ok != tc.ok || ok && n != tc.n {
				t.Errorf("roomFor = %d, %v; want %d, %v", n, ok, tc.n, tc.ok)
			}
		})
	}
}

// TestHasRoom: a node is refused by arithmetic only for what
// NodeResourcesFit would refuse it for.
func TestHasRoom(t *testing.T) {
	tests := []struct {
		name  string
		cards func(corev1.ResourceName) bool
		node  node
		gpus  int
		want  bool
	}{
		{name: "room left", cards: isGPU, node: node{name: "a", gpus: 8, pods: []int{6}}, gpus: 2, want: true},
		{name: "one card short", cards: isGPU, node: node{name: "a", gpus: 8, pods: []int{6}}, gpus: 3},
		{name: "no room for another pod", cards: isGPU, node: node{name: "a", gpus: 8, maxPods: 1, pods: []int{0}}, gpus: 1},
		{name: "no card resource at all: left to Filter", cards: isGPU, node: node{name: "cpu"}, gpus: 1, want: true},
		{name: "arithmetic not known to be checked", node: node{name: "a", gpus: 8, pods: []int{8}}, gpus: 1, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := simOf(t, &reach{cards: tc.cards}, tc.node)
			m := membersAsking(t, 1, tc.gpus, "")[0]
			if got := s.hasRoom(m, s.nodes[tc.node.name]); got != tc.want {
				t.Errorf("hasRoom = %v, want %v", got, tc.want)
			}
		})
	}
}

// statusesOnly is a status reader that cannot say whether Filter ran.
type statusesOnly struct{ fwk.NodeToStatusReader }

// TestReachOf: a plan leaves out, for pods shaped as the cycle's, only
// the nodes Filter refused for good, and only when it knows Filter ran.
func TestReachOf(t *testing.T) {
	nodes := []*corev1.Node{builder.MakeNode("model").Obj(), builder.MakeNode("quota").Obj(), builder.MakeNode("affinity").Obj()}
	lister := cache.NewSnapshot(nil, nodes).NodeInfos()
	filtered := func() *framework.NodeToStatus {
		m := framework.NewDefaultNodeToStatus()
		m.Set("model", fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "not among the pod's card models").WithPlugin("CardinalCardQuota"))
		m.Set("quota", fwk.NewStatus(fwk.Unschedulable, "queue at its capability").WithPlugin("CardinalQueue"))
		m.Set("affinity", fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "didn't match pod affinity rules").WithPlugin(schedulernames.InterPodAffinity))
		return m
	}
	refusedAtPreFilter := framework.NewNodeToStatus(map[string]*fwk.Status{}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "refused"))
	tests := []struct {
		name     string
		statuses fwk.NodeToStatusReader
		want     []string
	}{
		{name: "Filter ran: the node of a model it does not allow", statuses: filtered(), want: []string{"model"}},
		{name: "a PreFilter refused it: every node is tried", statuses: refusedAtPreFilter},
		{name: "a reader that cannot say: every node is tried", statuses: statusesOnly{filtered()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plugin{state: statetest.New()}
			pod := builder.MakePod("ns", "p").GPU(1).Obj()
			r, err := p.reachOf(pod, tc.statuses, lister)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(r.skip)); !slices.Equal(got, tc.want) {
				t.Errorf("skipped %v, want %v", got, tc.want)
			}
			if r.key != shapeKey(pod) {
				t.Errorf("key is not the pod's shape")
			}
		})
	}
}

// TestMembersOf: a member's needs are the card resources it requests as
// kube-scheduler counts them (an init container asking more counts), and
// none when nothing is known to check them.
func TestMembersOf(t *testing.T) {
	pod := builder.MakePod("ns", "m").GPU(2).Req(corev1.ResourceCPU, "1").Obj()
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{builder.GPUResource: resource.MustParse("4")}}}}
	for _, tc := range []struct {
		name  string
		cards func(corev1.ResourceName) bool
		want  []need
	}{
		{name: "cards checked", cards: isGPU, want: []need{{builder.GPUResource, 4}}},
		{name: "not known to be checked", cards: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := membersOf(state.Preemptor{Pods: []*corev1.Pod{pod}}, &reach{cards: tc.cards})
			if len(ms) != 1 || !slices.Equal(ms[0].need, tc.want) || ms[0].key != shapeKey(pod) {
				t.Errorf("members %+v, want one needing %v", ms, tc.want)
			}
		})
	}
}

// snapshotHandle is a framework handle that has only a snapshot.
type snapshotHandle struct {
	fwk.Handle
	snapshot *cache.Snapshot
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }

// TestNewSimLeavesOutLeaving: a pod whose room is, or is about to be,
// free (State.Leaving) is not in the plan's copy of its node; the
// scheduler's own snapshot keeps every pod.
func TestNewSimLeavesOutLeaving(t *testing.T) {
	var pods []*corev1.Pod
	var nodes []*corev1.Node
	for _, n := range []string{"kept", "free"} {
		nodes = append(nodes, builder.MakeNode(n).GPU("NVIDIA-H200", 8).Obj())
		for i := range 3 {
			p := builder.MakePod("ns", fmt.Sprintf("%s-%d", n, i)).GPU(1).Obj()
			p.UID, p.Spec.NodeName = types.UID(p.Name), n
			pods = append(pods, p)
		}
	}
	leaving := func(ls ...state.Leaving) func() []state.Leaving { return func() []state.Leaving { return ls } }
	tests := []struct {
		name string
		r    *reach
		want map[string][]string
	}{
		{"leaving pods leave the plan's copy of their node", &reach{leaving: leaving(state.Leaving{UID: "kept-0", Node: "kept", Charged: true}, state.Leaving{UID: "kept-2", Node: "kept"})},
			map[string][]string{"kept": {"kept-1"}, "free": {"free-0", "free-1", "free-2"}}},
		{"a pod the snapshot holds elsewhere, or no longer, is not looked for there", &reach{leaving: leaving(state.Leaving{UID: "free-1", Node: "kept", Charged: true}, state.Leaving{UID: "gone", Node: "free"}, state.Leaving{UID: "x", Node: "no-such-node"})},
			map[string][]string{"kept": {"kept-0", "kept-1", "kept-2"}, "free": {"free-0", "free-1", "free-2"}}},
		{"not known", &reach{},
			map[string][]string{"kept": {"kept-0", "kept-1", "kept-2"}, "free": {"free-0", "free-1", "free-2"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := cache.NewSnapshot(pods, nodes)
			s, err := newSim(t.Context(), snapshotHandle{snapshot: snap}, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			// Only a pod left out that is still charged has its charge
			// given back in each shape (shapeOf).
			wantCharged := 0
			if tc.r.leaving != nil && len(tc.want["kept"]) == 1 {
				wantCharged = 1
			}
			if len(s.charged) != wantCharged || wantCharged == 1 && (s.charged[0].info.GetPod().Name != "kept-0" || s.charged[0].node != "kept") {
				t.Errorf("charged pods left out: %v, want kept-0 on kept", s.charged)
			}
			names := func(ni fwk.NodeInfo) []string {
				var out []string
				for _, pi := range ni.GetPods() {
					out = append(out, pi.GetPod().Name)
				}
				slices.Sort(out)
				return out
			}
			for n, want := range tc.want {
				if got := names(s.nodes[n]); !slices.Equal(got, want) {
					t.Errorf("node %s in the plan holds %v, want %v", n, got, want)
				}
				if got := s.nodes[n].GetRequested().GetScalarResources()[builder.GPUResource]; got != int64(len(want)) {
					t.Errorf("node %s in the plan has %d GPUs requested, want %d", n, got, len(want))
				}
				orig, _ := snap.NodeInfos().Get(n)
				if got := len(orig.GetPods()); got != 3 {
					t.Errorf("the scheduler's snapshot of node %s holds %d pods, want 3", n, got)
				}
			}
		})
	}
}
