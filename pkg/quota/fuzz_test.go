package quota

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDeservedLargeNumbers: the largest weights and quantities a Queue may
// hold share without overflowing (SPEC §3.7): no share is negative, none
// exceeds what the queue may have, and weights still order the shares.
func TestDeservedLargeNumbers(t *testing.T) {
	const big = math.MaxInt64 / 2
	tests := []struct {
		name   string
		total  int64
		queues []QueueShare
		want   map[string]int64
	}{{
		name:  "weights of a million share a huge total",
		total: big,
		queues: []QueueShare{
			{Name: "a", Weight: 1000000, Request: Resources{cpu: big}},
			{Name: "b", Weight: 1, Request: Resources{cpu: big}},
		},
		// Rounding leaves one unit over, which goes to the first queue.
		want: map[string]int64{"a": mulDiv(big, 1000000, 1000001) + 1, "b": big - mulDiv(big, 1000000, 1000001) - 1},
	}, {
		name:  "guarantees that add up past int64 leave nothing to share",
		total: 10,
		queues: []QueueShare{
			{Name: "a", Weight: 1, Guarantee: Resources{cpu: math.MaxInt64}, Request: Resources{cpu: 5}},
			{Name: "b", Weight: 1, Guarantee: Resources{cpu: math.MaxInt64}, Request: Resources{cpu: 5}},
		},
		want: map[string]int64{"a": math.MaxInt64, "b": math.MaxInt64},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Deserved(Resources{cpu: tt.total}, tt.queues)
			for q, want := range tt.want {
				if got[q][cpu] != want {
					t.Errorf("queue %s: deserved %d, want %d", q, got[q][cpu], want)
				}
			}
		})
	}
}

// FuzzDeserved: for any weights and quantities the CRD accepts (weight 1 to
// 1e6, non-negative quantities up to int64), every share is between the
// queue's guarantee and the larger of its guarantee and what it may have,
// and what is shared beyond guarantees is at most what is left of total.
func FuzzDeserved(f *testing.F) {
	f.Add(int64(100), int32(1), int32(1), int64(0), int64(0), int64(60), int64(60), int64(-1), int64(-1))
	f.Add(int64(math.MaxInt64), int32(1000000), int32(999999), int64(0), int64(1), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(-1))
	f.Fuzz(func(t *testing.T, total int64, wa, wb int32, ga, gb, ra, rb, ca, cb int64) {
		abs := func(v int64) int64 {
			if v < 0 {
				return -(v + 1)
			}
			return v
		}
		weight := func(w int32) int32 { return 1 + int32(abs(int64(w))%1000000) }
		share := func(name string, w int32, g, r, c int64) QueueShare {
			q := QueueShare{Name: name, Weight: weight(w), Guarantee: Resources{cpu: abs(g)}, Request: Resources{cpu: abs(r)}}
			if c >= 0 { // negative: not capped
				q.Capability = Resources{cpu: max(c, abs(g))} // the CRD keeps capability >= guarantee
			}
			return q
		}
		total = abs(total)
		queues := []QueueShare{share("a", wa, ga, ra, ca), share("b", wb, gb, rb, cb)}
		got := Deserved(Resources{cpu: total}, queues)
		left := total
		for _, q := range queues {
			left = subSat(left, q.Guarantee[cpu])
		}
		var beyond int64
		for _, q := range queues {
			d, g := got[q.Name][cpu], q.Guarantee[cpu]
			upper := max(q.Request[cpu], g)
			if c, ok := q.Capability[cpu]; ok {
				upper = min(upper, c)
			}
			if d < g || d > max(upper, g) {
				t.Fatalf("queue %s (weight %d, guarantee %d, request %d, capability %v) of total %d: deserved %d",
					q.Name, q.Weight, g, q.Request[cpu], q.Capability, total, d)
			}
			beyond += d - g // each at most left, so the sum does not wrap before it is checked
			if beyond < 0 || beyond > max(left, 0) {
				t.Fatalf("shared %d beyond guarantees, only %d was left: %v", beyond, left, got)
			}
		}
	})
}

const cpu = corev1.ResourceCPU
