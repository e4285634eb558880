package podgroupstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/test/builder"
)

func TestCompute(t *testing.T) {
	pg := &schedv1alpha1.PodGroup{Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}}
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		p := builder.MakePod("ns", name).Obj()
		p.Spec.NodeName = node
		p.Status.Phase = phase
		return p
	}
	unschedulable := pod("a", "", corev1.PodPending)
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available"}}
	gated := pod("b", "", corev1.PodPending)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	tests := []struct {
		name string
		pods []*corev1.Pod
		held string
		want Summary
	}{
		{"too few pods", []*corev1.Pod{pod("a", "", corev1.PodPending)}, "",
			Summary{Phase: "Pending", WaitingReason: "1 of minMember 2 pods exist; waiting for 1 more"}},
		{"a pod behind scheduling gates", []*corev1.Pod{pod("a", "", corev1.PodPending), gated}, "",
			Summary{Phase: "Pending", WaitingReason: "1 of minMember 2 pods can be scheduled (1 more behind scheduling gates); waiting for 1 more"}},
		{"waiting with a reason", []*corev1.Pod{pod("c", "", corev1.PodPending), unschedulable}, "",
			Summary{Phase: "Pending", WaitingReason: "0 of minMember 2 pods scheduled; pod a: 0/3 nodes are available"}},
		{"the first pod to place has no reason yet", []*corev1.Pod{pod("0", "", corev1.PodPending), unschedulable}, "",
			Summary{Phase: "Pending", WaitingReason: "0 of minMember 2 pods scheduled"}},
		{"held", []*corev1.Pod{pod("c", "", corev1.PodPending), unschedulable}, "gang ns/g is held: its min needs 2 more pods",
			Summary{Phase: "Pending", WaitingReason: "0 of minMember 2 pods scheduled; gang ns/g is held: its min needs 2 more pods"}},
		{"min scheduled", []*corev1.Pod{pod("a", "n", corev1.PodPending), pod("b", "n", corev1.PodPending)}, "",
			Summary{Phase: "Scheduling", Scheduled: 2}},
		{"running", []*corev1.Pod{pod("a", "n", corev1.PodRunning), pod("b", "n", corev1.PodRunning), pod("c", "n", corev1.PodPending)}, "",
			Summary{Phase: "Running", Scheduled: 3, Running: 2}},
		{"finished", []*corev1.Pod{pod("a", "n", corev1.PodSucceeded), pod("b", "n", corev1.PodSucceeded)}, "",
			Summary{Phase: "Finished", Scheduled: 2, Succeeded: 2}},
		{"failed below min", []*corev1.Pod{pod("a", "n", corev1.PodFailed), pod("b", "n", corev1.PodRunning)}, "",
			Summary{Phase: "Failed", Scheduled: 2, Running: 1, Failed: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Compute(pg, tc.pods, tc.held)); diff != "" {
				t.Errorf("Compute (-want, +got):\n%s", diff)
			}
		})
	}
}
