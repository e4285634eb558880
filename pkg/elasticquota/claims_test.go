package elasticquota

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
)

// TestKeptRoom: room kept on a node for a preemptor's member is not given
// to other pods (SPEC §5.8), but is to the preemptor's own pods, and counts
// once when the framework already put the nominated member on the node.
func TestKeptRoom(t *testing.T) {
	const gpu corev1.ResourceName = "nvidia.com/gpu"
	member := builder.MakePod("ns", "g-0").Label("scheduling.x-k8s.io/pod-group", "g").GPU(2).Obj()
	member.UID = "g-0"
	claim := state.Claim{Key: state.PreemptorKeyFor("ns/g", member), Queue: "a", Pod: member.UID, Node: "n", Request: quota.Resources{gpu: 2}}
	running := builder.MakePod("ns", "running").GPU(2).Obj()
	running.Spec.NodeName = "n"
	node := func(pods ...*corev1.Pod) *framework.NodeInfo {
		ni := framework.NewNodeInfo(pods...)
		ni.SetNode(builder.MakeNode("n").GPU("NVIDIA-H200", 6).Obj())
		return ni
	}
	other := builder.MakePod("ns", "other").GPU(3).Obj()
	sameGang := builder.MakePod("ns", "g-1").Label("scheduling.x-k8s.io/pod-group", "g").GPU(3).Obj()
	small := builder.MakePod("ns", "small").GPU(2).Obj()
	cpuOnly := builder.MakePod("ns", "cpu").Req(corev1.ResourceCPU, "1").Obj()
	tests := []struct {
		name   string
		pod    *corev1.Pod
		queue  string // the pod's, as checked
		ni     *framework.NodeInfo
		claims []state.Claim
		want   string // "" for allowed, else part of the refusal
	}{
		{"no room kept", other, "a", node(running), nil, ""},
		{"another pod may not take kept room", other, "a", node(running), []state.Claim{claim}, "nvidia.com/gpu is kept for a gang that preempted for it (2 of 4 free is kept)"},
		{"another pod may take what is free beyond it", small, "a", node(running), []state.Claim{claim}, ""},
		{"the preemptor's own pods may take it", sameGang, "a", node(running), []state.Claim{claim}, ""},
		{"not as pods of another queue", sameGang, "c", node(running), []state.Claim{claim}, "nvidia.com/gpu is kept for a gang that preempted for it (2 of 4 free is kept)"},
		{"kept cards do not keep CPU", cpuOnly, "a", node(running), []state.Claim{claim}, ""},
		{"the nominated member already on the node counts once", small, "a", node(running, member), []state.Claim{claim}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := gang.Of(tc.pod)
			st := keptRoom(state.PreemptorKeyFor(k, tc.pod), tc.queue, quota.PodRequests(tc.pod), tc.ni, tc.claims)
			switch {
			case tc.want == "" && !st.IsSuccess():
				t.Errorf("refused: %v", st)
			case tc.want != "" && (st.IsSuccess() || !strings.Contains(st.Message(), tc.want)):
				t.Errorf("got %v, want refused: %q", st, tc.want)
			}
		})
	}
}
