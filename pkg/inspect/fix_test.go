package inspect

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/pkg/state"
)

// TestFix: what would let a pod run is read off the scheduler's refusal,
// with its numbers.
func TestFix(t *testing.T) {
	c := &Cluster{State: state.New(state.DefaultSettings()), Settings: state.DefaultSettings()}
	c.Settings.SchedulerName = "cardinal-scheduler"
	pod := newPod()
	tests := []struct {
		name, plugin, reason, want string
	}{
		{"queue short of room", "CardinalQueue",
			"0/2 nodes are available: queue a has insufficient cpu quota: requested 2, would use 5, capability 4.",
			"queue a needs 1 more cpu: raise its capability for cpu to 5, or end work in queue a that uses it (kubectl cardinal queues shows its use)"},
		{"memory in binary units", "CardinalQueue",
			"queue a has insufficient memory quota: requested 8Gi, would use 40Gi, capability 32Gi",
			"queue a needs 8Gi more memory: raise its capability for memory to 40Gi, or end work in queue a that uses it (kubectl cardinal queues shows its use)"},
		{"min alone above capability", "CardinalCardQuota",
			"gang ns/g is held: its min needs 8 more pods; queue a has insufficient NVIDIA-H200 quota: requested 32, would use 44, capability 12 (its elastic pods counted as free)",
			"it alone asks for 32 NVIDIA-H200, more than queue a's capability of 12: raise the capability to at least 44, or ask for less (a lower minMember, smaller pods)"},
		{"non-preemptible beyond guarantee", "CardinalQueue",
			"queue a: non-preemptible pods may use only its guarantee of cpu: requested 2, would use 3, guarantee 1.",
			"raise queue a's guarantee of cpu to 3, or make the workload preemptible (label cardinal.dev/preemptibility)"},
		{"gang below its min", "CardinalGang", "gang ns/g has 2 of its minMember 3 pods; waiting for 1 more",
			"create 1 more pods of the gang, or lower its minMember"},
		{"another gang placed first", "CardinalGang", "0/2 nodes are available: waiting for gang ns/a, which is being placed (2 of its min 3 placed).",
			"nothing: it is tried as soon as gang ns/a is placed or gives up (gangs are placed one at a time, so none deadlocks)"},
		{"backing off", "scheduler", "gang ns/g is backing off until 2026-11-23T10:00:00Z after: x",
			"nothing: it is tried again at 2026-11-23T10:00:00Z"},
		{"other scheduler in the gang", "CardinalGang", "gang ns/g has pods that name another scheduler: g-1 (default-scheduler); every pod ...",
			"set schedulerName: cardinal-scheduler on every pod of gang ns/g"},
		{"no room", "NodeResourcesFit", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
			"free nvidia.com/gpu on nodes: running pods ending, nodes added, or preemption when its queue is below its deserved share (pods that are non-preemptible are never evicted)"},
		{"nothing known", "VolumeBinding", "0/3 nodes are available: 3 node(s) had volume node affinity conflict.", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.fix(pod, tc.plugin, tc.reason); got != tc.want {
				t.Errorf("fix:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func newPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
}
