package queuestatus

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
)

// TestCompute: status.cards lists every model the queue lists or uses,
// sorted, with a one-line summary and its deserved share; a model used
// beyond its capability (the Queue was lowered, or never listed it) sets
// OverCapability, and use beyond the deserved share sets OverDeserved.
func TestCompute(t *testing.T) {
	q := builder.MakeQueue("a").Capability(corev1.ResourceCPU, "4").Card("NVIDIA-H200", 3, 6).Card("NVIDIA-A100", 1, 1).Obj()
	u := state.Usage{
		Allocated:  quota.Resources{corev1.ResourceCPU: 2000},
		Capability: quota.Resources{corev1.ResourceCPU: 4000},
		Deserved:   quota.Resources{corev1.ResourceCPU: 3000},
		Cards: map[string]state.CardUsage{
			"NVIDIA-A100": {Listed: true, Guarantee: 1, Capability: 1, Deserved: 1},
			"NVIDIA-H200": {Listed: true, Guarantee: 3, Capability: 6, Allocated: 5, Deserved: 4},
			"NVIDIA-L40S": {Allocated: 1},
			"NVIDIA-B200": {Pending: 2}, // asked for, not listed, not used: not shown
		},
	}
	st := Compute(state.QueueStatus{Queue: q, Usage: u}, metav1.Now())
	want := []struct {
		name                                      string
		allocated, guarantee, capability, deserve int32
	}{
		{"NVIDIA-A100", 0, 1, 1, 1},
		{"NVIDIA-H200", 5, 3, 6, 4},
		{"NVIDIA-L40S", 1, 0, 0, 0},
	}
	var got []struct {
		name                                      string
		allocated, guarantee, capability, deserve int32
	}
	for _, c := range st.Cards {
		got = append(got, struct {
			name                                      string
			allocated, guarantee, capability, deserve int32
		}{c.Name, c.Allocated, c.Guarantee, c.Capability, c.Deserved})
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(want[0])); diff != "" {
		t.Errorf("cards (-want, +got):\n%s", diff)
	}
	if want := "NVIDIA-A100=0/1,NVIDIA-H200=5/6,NVIDIA-L40S=1/0"; st.CardSummary != want {
		t.Errorf("summary %q, want %q", st.CardSummary, want)
	}
	if st.AllocatedSummary != "cpu=2" || st.Deserved.Cpu().String() != "3" {
		t.Errorf("allocated %q, deserved %v; want cpu=2 and 3", st.AllocatedSummary, st.Deserved.Cpu())
	}
	c := meta.FindStatusCondition(st.Conditions, OverCapability)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "NVIDIA-L40S uses 1 cards of 0") || strings.Contains(c.Message, "cpu") {
		t.Errorf("OverCapability = %+v, want True naming NVIDIA-L40S only", c)
	}
	c = meta.FindStatusCondition(st.Conditions, OverDeserved)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "NVIDIA-H200 uses 5 cards of 4") {
		t.Errorf("OverDeserved = %+v, want True naming NVIDIA-H200", c)
	}
	if !equalStatus(st, Compute(state.QueueStatus{Queue: q, Usage: u}, metav1.Now())) {
		t.Error("the same numbers give a different status: the writer would write forever")
	}
}

// TestComputeOverCapability: a resource the Queue's capability leaves out is
// not capped (SPEC §1.1), so a queue with card quota only is never over its
// capability of cpu, memory or the plain GPU resource; use exactly at a
// capability is within it.
func TestComputeOverCapability(t *testing.T) {
	h200 := map[string]state.CardUsage{"NVIDIA-H200": {Listed: true, Guarantee: 4, Capability: 4, Allocated: 4, Deserved: 4}}
	used := quota.Resources{corev1.ResourceCPU: 400, corev1.ResourceMemory: 512 << 20, "nvidia.com/gpu": 4}
	tests := []struct {
		name       string
		queue      *builder.QueueWrapper
		capability quota.Resources
		cards      map[string]state.CardUsage
		want       metav1.ConditionStatus
		wantIn     string
	}{
		{name: "card quota only", queue: builder.MakeQueue("a").Card("NVIDIA-H200", 4, 4), cards: h200, want: metav1.ConditionFalse},
		{name: "cpu capped, memory not", queue: builder.MakeQueue("a").Capability(corev1.ResourceCPU, "400m").Card("NVIDIA-H200", 4, 4),
			capability: quota.Resources{corev1.ResourceCPU: 400}, cards: h200, want: metav1.ConditionFalse},
		{name: "cpu over its capability", queue: builder.MakeQueue("a").Capability(corev1.ResourceCPU, "300m"),
			capability: quota.Resources{corev1.ResourceCPU: 300}, want: metav1.ConditionTrue, wantIn: "cpu uses 400m of 300m"},
		{name: "capability of 0 listed", queue: builder.MakeQueue("a").Capability("nvidia.com/gpu", "0"),
			capability: quota.Resources{"nvidia.com/gpu": 0}, want: metav1.ConditionTrue, wantIn: "nvidia.com/gpu uses 4 of 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := state.Usage{Allocated: used, Capability: tc.capability, Cards: tc.cards}
			st := Compute(state.QueueStatus{Queue: tc.queue.Obj(), Usage: u}, metav1.Now())
			c := meta.FindStatusCondition(st.Conditions, OverCapability)
			if c == nil || c.Status != tc.want || !strings.Contains(c.Message, tc.wantIn) {
				t.Errorf("OverCapability = %+v, want %s containing %q", c, tc.want, tc.wantIn)
			}
		})
	}
}
