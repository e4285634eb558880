package queuecache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/test/builder"
)

func cpu(m int64) quota.Resources { return quota.Resources{corev1.ResourceCPU: m} }

// TestIdempotentAccounting: whatever order and however often informer
// events and Reserve/Unreserve arrive, a pod is charged once, and removing
// it gives back exactly what it was charged.
func TestIdempotentAccounting(t *testing.T) {
	pod := builder.MakePod("ns", "p").Obj()
	pod.UID = types.UID("p")
	info := PodInfo{Queue: "a", Request: cpu(1000), NonPreemptible: true, Gang: "ns/g"}
	steps := []struct {
		name                    string
		do                      func(c *Cache)
		allocated, nonPre, pend int64
		gangPlaced              int
	}{
		{"pending pod seen", func(c *Cache) { c.AddPodIfAbsent(pod, info, "") }, 0, 0, 1000, 0},
		{"seen again", func(c *Cache) { c.AddPodIfAbsent(pod, info, "") }, 0, 0, 1000, 0},
		{"reserved", func(c *Cache) { c.AddPodIfAbsent(pod, info, "n1") }, 1000, 1000, 0, 1},
		{"reserved twice", func(c *Cache) { c.AddPodIfAbsent(pod, info, "n1") }, 1000, 1000, 0, 1},
		{"unreserved", func(c *Cache) { c.Unplace(pod.UID) }, 0, 0, 1000, 0},
		{"unreserved twice", func(c *Cache) { c.Unplace(pod.UID) }, 0, 0, 1000, 0},
		{"bound (informer)", func(c *Cache) { c.AddPodIfAbsent(pod, info, "n1") }, 1000, 1000, 0, 1},
		{"deleted", func(c *Cache) { c.RemovePodIfPresent(pod.UID) }, 0, 0, 0, 0},
		{"deleted twice", func(c *Cache) { c.RemovePodIfPresent(pod.UID) }, 0, 0, 0, 0},
	}
	c := New()
	for _, s := range steps {
		s.do(c)
		u := c.Usage("a")
		got := []int64{u.Allocated[corev1.ResourceCPU], u.NonPreemptible[corev1.ResourceCPU], u.Pending[corev1.ResourceCPU], int64(c.GangPlaced("ns/g"))}
		want := []int64{s.allocated, s.nonPre, s.pend, int64(s.gangPlaced)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("after %s: [allocated nonPreemptible pending gangPlaced] (-want, +got):\n%s", s.name, diff)
		}
	}
}

// TestReserveDecisionKept: a pod reserved as preemptible (an elastic pod of a
// semi-preemptible gang) keeps that when the informer reports it bound.
func TestReserveDecisionKept(t *testing.T) {
	pod := builder.MakePod("ns", "p").Obj()
	pod.UID = "p"
	c := New()
	c.AddPodIfAbsent(pod, PodInfo{Queue: "a", Request: cpu(500)}, "n1")
	c.AddPodIfAbsent(pod, PodInfo{Queue: "a", Request: cpu(500), NonPreemptible: true}, "")
	if u := c.Usage("a"); len(u.NonPreemptible) != 0 {
		t.Errorf("non-preemptible use %v, want none", u.NonPreemptible)
	}
}
