package queuecache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// allocatedCards is a queue's card use, model to cards.
func allocatedCards(c *Cache, queue string) map[string]int64 {
	out := map[string]int64{}
	for model, u := range c.Cards(queue) {
		if u.Allocated != 0 {
			out[model] = u.Allocated
		}
	}
	return out
}

// TestCardCharges: a placed pod is charged cards of its node's model, by
// UID; Unreserve and deletion give back exactly that; node changes move or
// keep the charge as the node's cards say.
func TestCardCharges(t *testing.T) {
	pod := builder.MakePod("ns", "p").GPU(2).Obj()
	pod.UID = types.UID("p")
	info := PodInfo{Queue: "a"}
	h200 := builder.MakeNode("n1").GPU("NVIDIA-H200", 8).Obj()
	relabelled := builder.MakeNode("n1").GPU("NVIDIA-H200-NVL", 8).Obj()
	resliced := builder.MakeNode("n1").Res("nvidia.com/mig-1g.18gb", "7").Label("nvidia.com/gpu.product", "NVIDIA-H200-NVL").Obj()
	steps := []struct {
		name string
		do   func(c *Cache)
		want map[string]int64
	}{
		{"pending: no cards", func(c *Cache) { c.AddPodIfAbsent(pod, info, "") }, map[string]int64{}},
		{"bound before its node is known: no model yet", func(c *Cache) { c.AddPodIfAbsent(pod, info, "n1") }, map[string]int64{}},
		{"node arrives: charged its model", func(c *Cache) { c.UpsertNode(h200) }, map[string]int64{"NVIDIA-H200": 2}},
		{"same node again", func(c *Cache) { c.UpsertNode(h200) }, map[string]int64{"NVIDIA-H200": 2}},
		{"unreserved", func(c *Cache) { c.Unplace(pod.UID) }, map[string]int64{}},
		{"reserved", func(c *Cache) { c.AddPodIfAbsent(pod, info, "n1") }, map[string]int64{"NVIDIA-H200": 2}},
		{"informer update before bind", func(c *Cache) { c.AddPodIfAbsent(pod, info, "") }, map[string]int64{"NVIDIA-H200": 2}},
		{"node relabelled: charge moves", func(c *Cache) { c.UpsertNode(relabelled) }, map[string]int64{"NVIDIA-H200-NVL": 2}},
		{"node re-sliced under the pod: charge kept", func(c *Cache) { c.UpsertNode(resliced) }, map[string]int64{"NVIDIA-H200-NVL": 2}},
		{"node removed: charge kept", func(c *Cache) { c.DeleteNode("n1") }, map[string]int64{"NVIDIA-H200-NVL": 2}},
		{"pod deleted", func(c *Cache) { c.RemovePodIfPresent(pod.UID) }, map[string]int64{}},
	}
	c := New()
	if err := c.UpsertQueue(builder.MakeQueue("a").Card("NVIDIA-H200", 2, 4).Obj()); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		s.do(c)
		if diff := cmp.Diff(s.want, allocatedCards(c, "a")); diff != "" {
			t.Fatalf("after %s: cards (-want, +got):\n%s", s.name, diff)
		}
	}
	// The model the queue lists stays, unused; the one it never listed is gone.
	if diff := cmp.Diff(map[string]CardUsage{"NVIDIA-H200": {Listed: true, Guarantee: 2, Capability: 4}}, c.Cards("a")); diff != "" {
		t.Errorf("final card usage (-want, +got):\n%s", diff)
	}
}

// TestCardQuotaEdits: editing or deleting a Queue changes its quota, never
// what its pods use.
func TestCardQuotaEdits(t *testing.T) {
	c := New()
	c.UpsertNode(builder.MakeNode("n1").GPU("NVIDIA-H200", 8).Obj())
	pod := builder.MakePod("ns", "p").GPU(3).Obj()
	pod.UID = "p"
	mustUpsert := func(q *v1alpha1.Queue) {
		if err := c.UpsertQueue(q); err != nil {
			t.Fatal(err)
		}
	}
	mustUpsert(builder.MakeQueue("a").Card("NVIDIA-H200", 3, 6).Obj())
	c.AddPodIfAbsent(pod, PodInfo{Queue: "a", NonPreemptible: true}, "n1")
	want := CardUsage{Listed: true, Guarantee: 3, Capability: 6, Allocated: 3, NonPreemptible: 3}
	if diff := cmp.Diff(want, c.Cards("a")["NVIDIA-H200"]); diff != "" {
		t.Fatalf("(-want, +got):\n%s", diff)
	}
	mustUpsert(builder.MakeQueue("a").Card("NVIDIA-A100", 1, 1).Obj())
	want = CardUsage{Allocated: 3, NonPreemptible: 3}
	if diff := cmp.Diff(want, c.Cards("a")["NVIDIA-H200"]); diff != "" {
		t.Fatalf("after the model was dropped from the queue (-want, +got):\n%s", diff)
	}
	c.DeleteQueue("a")
	if _, ok := c.Cards("a")["NVIDIA-A100"]; ok {
		t.Error("a deleted queue still has card quota")
	}
	mustUpsert(builder.MakeQueue("a").Card("NVIDIA-H200", 3, 6).Obj())
	if got := c.Cards("a")["NVIDIA-H200"].Allocated; got != 3 {
		t.Errorf("after the queue came back: allocated %d, want 3", got)
	}
}

func TestRequestCardUnlimitedCPUMemory(t *testing.T) {
	gpuPod := builder.MakePod("ns", "g").Req(corev1.ResourceCPU, "4").Req(corev1.ResourceMemory, "1Gi").GPU(1).Obj()
	cpuPod := builder.MakePod("ns", "c").Req(corev1.ResourceCPU, "4").Obj()
	tpuPod := builder.MakePod("ns", "t").Req(corev1.ResourceCPU, "4").Req("example.com/tpu", "1").Obj()
	c := New()
	c.UpsertNode(builder.MakeNode("n").Res("example.com/tpu", "4").Label("example.com/tpu.product", "Example-TPU").Obj())
	if got := c.Request(gpuPod)[corev1.ResourceCPU]; got != 4000 {
		t.Errorf("by default a GPU pod is charged cpu: got %d, want 4000", got)
	}
	c.SetCardUnlimitedCPUMemory(true)
	tests := []struct {
		pod  *corev1.Pod
		want []corev1.ResourceName
	}{
		{gpuPod, []corev1.ResourceName{"nvidia.com/gpu"}},
		{cpuPod, []corev1.ResourceName{corev1.ResourceCPU}},
		{tpuPod, []corev1.ResourceName{"example.com/tpu"}},
	}
	for _, tt := range tests {
		var got []corev1.ResourceName
		for name := range c.Request(tt.pod) {
			got = append(got, name)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: charged resources (-want, +got):\n%s", tt.pod.Name, diff)
		}
	}
}

// TestUpdatePodIfPresent: a pod charged to the wrong queue (seen before its
// namespace) moves, cards and all; a pod deleted meanwhile is not brought back.
func TestUpdatePodIfPresent(t *testing.T) {
	c := New()
	c.UpsertNode(builder.MakeNode("n1").GPU("NVIDIA-H200", 8).Obj())
	pod := builder.MakePod("ns", "p").Req(corev1.ResourceCPU, "1").GPU(2).Obj()
	pod.UID = "p"
	c.AddPodIfAbsent(pod, PodInfo{Queue: "default", Request: cpu(1000)}, "n1")
	c.UpdatePodIfPresent(pod, PodInfo{Queue: "team", Request: cpu(1000)})
	if got := allocatedCards(c, "default"); len(got) != 0 {
		t.Errorf("default still charged %v", got)
	}
	if diff := cmp.Diff(map[string]int64{"NVIDIA-H200": 2}, allocatedCards(c, "team")); diff != "" {
		t.Errorf("team cards (-want, +got):\n%s", diff)
	}
	if got := c.Usage("team").Allocated[corev1.ResourceCPU]; got != 1000 {
		t.Errorf("team cpu %d, want 1000", got)
	}
	c.RemovePodIfPresent(pod.UID)
	c.UpdatePodIfPresent(pod, PodInfo{Queue: "team", Request: cpu(1000)})
	if _, _, _, ok := c.Pod(pod.UID); ok || len(c.PodsIn("ns")) != 0 {
		t.Error("a deleted pod came back")
	}
}
