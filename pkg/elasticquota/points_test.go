package elasticquota

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

func cpu(m int64) quota.Resources { return quota.Resources{corev1.ResourceCPU: m} }

// TestPreemptionSimulation: RemovePod of a victim in the pod's queue makes
// room in the cycle's numbers, AddPod takes it again, pods of other queues
// change nothing, and a clone is independent of the original.
func TestPreemptionSimulation(t *testing.T) {
	st := statetest.New()
	p := &Plugin{state: st}
	placed := func(name, queue, preemptibility string) *corev1.Pod {
		pod := builder.MakePod("ns", name).Label(v1alpha1.QueueLabel, queue).Label(v1alpha1.PreemptibilityLabel, preemptibility).Req(corev1.ResourceCPU, "1").Obj()
		pod.UID = types.UID(name)
		pod.Spec.NodeName = "n1"
		st.OnPod(pod)
		return pod
	}
	victim := placed("victim", "a", v1alpha1.NonPreemptible)
	other := placed("other", "b", v1alpha1.Preemptible)

	// As a preemption simulation's PreFilter leaves it: not yet checked.
	s := &stateData{
		queue: "a", request: cpu(1000), nonPreemptible: true, recheck: true,
		guarantee:         cpu(1000),
		capability:        cpu(1000),
		allocated:         cpu(1000),
		nonPreemptibleUse: cpu(1000),
	}
	cs := framework.NewCycleState()
	cs.Write(stateKey, s)
	ni := framework.NewNodeInfo()
	info := func(pod *corev1.Pod) fwk.PodInfo {
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			t.Fatal(err)
		}
		return pi
	}
	ctx := context.Background()
	if st := p.Filter(ctx, cs, nil, ni); st.Code() != fwk.Unschedulable {
		t.Fatalf("full queue: Filter %v, want Unschedulable", st)
	}
	clone := cs.Clone()
	p.RemovePod(ctx, clone, nil, info(other), ni)
	if st := p.Filter(ctx, clone, nil, ni); st.Code() != fwk.Unschedulable {
		t.Errorf("removing a pod of another queue made room: %v", st)
	}
	p.RemovePod(ctx, clone, nil, info(victim), ni)
	if st := p.Filter(ctx, clone, nil, ni); !st.IsSuccess() {
		t.Errorf("after removing the victim: Filter %v, want success", st)
	}
	if st := p.Filter(ctx, cs, nil, ni); st.Code() != fwk.Unschedulable {
		t.Errorf("the original state changed with its clone: %v", st)
	}
	p.AddPod(ctx, clone, nil, info(victim), ni)
	if st := p.Filter(ctx, clone, nil, ni); st.Code() != fwk.Unschedulable {
		t.Errorf("after adding the victim back: Filter %v, want Unschedulable", st)
	}
}

func TestCheckMessages(t *testing.T) {
	tests := []struct {
		name string
		s    stateData
		want string
	}{
		{"capability", stateData{queue: "team-a", request: cpu(2000), capability: cpu(4000), allocated: cpu(3000)},
			"queue team-a has insufficient cpu quota: requested 2, would use 5, capability 4"},
		{"guarantee for non-preemptible", stateData{queue: "team-a", request: cpu(1000), nonPreemptible: true, guarantee: cpu(1000), capability: cpu(8000), allocated: cpu(1000), nonPreemptibleUse: cpu(1000)},
			"queue team-a: non-preemptible pods may use only its guarantee of cpu: requested 1, would use 2, guarantee 1"},
		{"capped but not guaranteed: guarantee 0", stateData{queue: "q", request: quota.Resources{"nvidia.com/gpu": 1}, nonPreemptible: true, capability: quota.Resources{"nvidia.com/gpu": 4}},
			"queue q: non-preemptible pods may use only its guarantee of nvidia.com/gpu: requested 1, would use 1, guarantee 0"},
		{"preemptible may borrow", stateData{queue: "q", request: cpu(3000), guarantee: cpu(1000), capability: cpu(8000), allocated: cpu(1000)}, ""},
		{"uncapped resource", stateData{queue: "q", request: quota.Resources{corev1.ResourceMemory: 1 << 40}, capability: cpu(1)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if st := tc.s.check(); st != nil {
				got = st.Message()
			}
			if got != tc.want {
				t.Errorf("check = %q, want %q", got, tc.want)
			}
		})
	}
}
