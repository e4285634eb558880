package elasticquota

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/pkg/queuecache"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/test/builder"
)

func cpu(m int64) quota.Resources { return quota.Resources{corev1.ResourceCPU: m} }

// TestPreemptionSimulation: RemovePod of a victim in the pod's queue makes
// room in the cycle's numbers, AddPod takes it again, pods of other queues
// change nothing, and a clone is independent of the original.
func TestPreemptionSimulation(t *testing.T) {
	qc := queuecache.New()
	p := &Plugin{cache: qc}
	victim := builder.MakePod("ns", "victim").Obj()
	victim.UID = "victim"
	other := builder.MakePod("ns", "other").Obj()
	other.UID = "other"
	qc.AddPodIfAbsent(victim, queuecache.PodInfo{Queue: "a", Request: cpu(1000), NonPreemptible: true}, "n1")
	qc.AddPodIfAbsent(other, queuecache.PodInfo{Queue: "b", Request: cpu(1000)}, "n1")

	s := &stateData{
		info:           queuecache.PodInfo{Queue: "a", Request: cpu(1000), NonPreemptible: true},
		guarantee:      cpu(1000),
		capability:     cpu(1000),
		allocated:      cpu(1000),
		nonPreemptible: cpu(1000),
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
		{"capability", stateData{info: queuecache.PodInfo{Queue: "team-a", Request: cpu(2000)}, capability: cpu(4000), allocated: cpu(3000)},
			"queue team-a has insufficient cpu quota: requested 2, would use 5, capability 4"},
		{"guarantee for non-preemptible", stateData{info: queuecache.PodInfo{Queue: "team-a", Request: cpu(1000), NonPreemptible: true}, guarantee: cpu(1000), capability: cpu(8000), allocated: cpu(1000), nonPreemptible: cpu(1000)},
			"queue team-a: non-preemptible pods may use only its guarantee of cpu: requested 1, would use 2, guarantee 1"},
		{"capped but not guaranteed: guarantee 0", stateData{info: queuecache.PodInfo{Queue: "q", Request: quota.Resources{"nvidia.com/gpu": 1}, NonPreemptible: true}, capability: quota.Resources{"nvidia.com/gpu": 4}},
			"queue q: non-preemptible pods may use only its guarantee of nvidia.com/gpu: requested 1, would use 1, guarantee 0"},
		{"preemptible may borrow", stateData{info: queuecache.PodInfo{Queue: "q", Request: cpu(3000)}, guarantee: cpu(1000), capability: cpu(8000), allocated: cpu(1000)}, ""},
		{"uncapped resource", stateData{info: queuecache.PodInfo{Queue: "q", Request: quota.Resources{corev1.ResourceMemory: 1 << 40}}, capability: cpu(1)}, ""},
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
