package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const units corev1.ResourceName = "example.com/units"

func u(v int64) Resources { return Resources{units: v} }

func TestDeserved(t *testing.T) {
	tests := []struct {
		name   string
		total  int64
		queues []QueueShare
		want   map[string]int64
	}{
		{
			name:  "proportion example: asks below the even split are met, the rest goes to the other",
			total: 100,
			queues: []QueueShare{
				{Name: "a", Weight: 1, Request: u(40)},
				{Name: "b", Weight: 1, Request: u(60)},
			},
			want: map[string]int64{"a": 40, "b": 60},
		},
		{
			name:  "both ask for everything: split by weight",
			total: 90,
			queues: []QueueShare{
				{Name: "a", Weight: 2, Request: u(100)},
				{Name: "b", Weight: 1, Request: u(100)},
			},
			want: map[string]int64{"a": 60, "b": 30},
		},
		{
			name:  "capability caps a queue and its share flows to others",
			total: 100,
			queues: []QueueShare{
				{Name: "a", Weight: 1, Request: u(100), Capability: u(20)},
				{Name: "b", Weight: 1, Request: u(100)},
			},
			want: map[string]int64{"a": 20, "b": 80},
		},
		{
			name:  "guarantee first, then the rest by weight",
			total: 100,
			queues: []QueueShare{
				{Name: "a", Weight: 1, Request: u(100), Guarantee: u(60)},
				{Name: "b", Weight: 1, Request: u(100)},
			},
			want: map[string]int64{"a": 80, "b": 20},
		},
		{
			name:  "guarantee kept even when not asked for",
			total: 100,
			queues: []QueueShare{
				{Name: "a", Weight: 1, Request: u(0), Guarantee: u(30)},
				{Name: "b", Weight: 1, Request: u(100)},
			},
			want: map[string]int64{"a": 30, "b": 70},
		},
		{
			name:  "more asked than there is, uneven rounding",
			total: 10,
			queues: []QueueShare{
				{Name: "a", Weight: 1, Request: u(10)},
				{Name: "b", Weight: 1, Request: u(10)},
				{Name: "c", Weight: 1, Request: u(10)},
			},
			want: map[string]int64{"a": 4, "b": 3, "c": 3},
		},
		{
			name:  "cluster smaller than the guarantees",
			total: 10,
			queues: []QueueShare{
				{Name: "a", Weight: 1, Request: u(20), Guarantee: u(8)},
				{Name: "b", Weight: 1, Request: u(20), Guarantee: u(8)},
			},
			want: map[string]int64{"a": 8, "b": 8},
		},
		{
			name:   "nothing asked",
			total:  10,
			queues: []QueueShare{{Name: "a", Weight: 1}},
			want:   map[string]int64{"a": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Deserved(u(tc.total), tc.queues)
			flat := map[string]int64{}
			for q, r := range got {
				flat[q] = r[units]
			}
			if diff := cmp.Diff(tc.want, flat); diff != "" {
				t.Errorf("deserved (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestExceededAndFormat(t *testing.T) {
	cap4 := Resources{corev1.ResourceCPU: 4000}
	if name, over := Exceeded(Resources{corev1.ResourceCPU: 3000}, Resources{corev1.ResourceCPU: 1000, corev1.ResourceMemory: 1 << 40}, cap4); over {
		t.Errorf("3+1 cpu of 4 reported over on %s; memory is not capped", name)
	}
	if name, over := Exceeded(Resources{corev1.ResourceCPU: 3500}, Resources{corev1.ResourceCPU: 1000}, cap4); !over || name != corev1.ResourceCPU {
		t.Errorf("3.5+1 cpu of 4 not reported over")
	}
	if got := Format(corev1.ResourceCPU, 1500); got != "1500m" {
		t.Errorf("Format cpu = %q", got)
	}
	if got := Format(corev1.ResourceMemory, 8<<30); got != "8Gi" {
		t.Errorf("Format memory = %q", got)
	}
}
