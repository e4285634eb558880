package cardmodel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"cardinal.dev/cardinal/test/builder"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		want Node
	}{
		{
			name: "whole cards",
			node: builder.MakeNode("n").GPU("NVIDIA-H200", 8).Res("rdma/hca", "4").Obj(),
			want: Node{Product: "NVIDIA-H200", Cards: []Card{{Model: "NVIDIA-H200", Resource: "nvidia.com/gpu", Count: 8}}},
		},
		{
			name: "MIG slices beside whole cards",
			node: builder.MakeNode("n").GPU("NVIDIA-H200", 4).Res("nvidia.com/mig-1g.18gb", "7").Res("nvidia.com/mig-3g.71gb", "2").Obj(),
			want: Node{Product: "NVIDIA-H200", Cards: []Card{
				{Model: "NVIDIA-H200", Resource: "nvidia.com/gpu", Count: 4},
				{Model: "NVIDIA-H200/mig-1g.18gb-mixed", Resource: "nvidia.com/mig-1g.18gb", Count: 7},
				{Model: "NVIDIA-H200/mig-3g.71gb-mixed", Resource: "nvidia.com/mig-3g.71gb", Count: 2},
			}},
		},
		{
			name: "MPS shares",
			node: builder.MakeNode("n").GPU("NVIDIA-L40S", 2).Res(MPSResource, "8").
				Label(MPSReplicasLabel, "4").Label(NVIDIAMemoryLabel, "46068").Obj(),
			want: Node{Product: "NVIDIA-L40S", Cards: []Card{
				{Model: "NVIDIA-L40S", Resource: "nvidia.com/gpu", Count: 2},
				{Model: "NVIDIA-L40S/mps-45g*1/4", Resource: MPSResource, Count: 8, Former: "NVIDIA-L40S/mps-11g*1/4"},
			}},
		},
		{
			// SPEC §1.4's own example: the whole card's memory in GiB, rounded to the nearest.
			name: "MPS shares of an NVIDIA-H800 split in 2",
			node: builder.MakeNode("n").GPU("NVIDIA-H800", 8).Res(MPSResource, "4").
				Label(MPSReplicasLabel, "2").Label(NVIDIAMemoryLabel, "81559").Obj(),
			want: Node{Product: "NVIDIA-H800", Cards: []Card{
				{Model: "NVIDIA-H800", Resource: "nvidia.com/gpu", Count: 8},
				{Model: "NVIDIA-H800/mps-80g*1/2", Resource: MPSResource, Count: 4, Former: "NVIDIA-H800/mps-39g*1/2"},
			}},
		},
		{
			name: "MPS shares whose memory rounds down, one replica",
			node: builder.MakeNode("n").GPU("NVIDIA-A100", 1).Res(MPSResource, "1").
				Label(MPSReplicasLabel, "1").Label(NVIDIAMemoryLabel, "40960").Obj(),
			want: Node{Product: "NVIDIA-A100", Cards: []Card{
				{Model: "NVIDIA-A100", Resource: "nvidia.com/gpu", Count: 1},
				{Model: "NVIDIA-A100/mps-40g*1/1", Resource: MPSResource, Count: 1},
			}},
		},
		{
			name: "other vendor",
			node: builder.MakeNode("n").Res("huawei.com/Ascend910", "8").Label("huawei.com/Ascend910.product", "Ascend-910B").Obj(),
			want: Node{Product: "Ascend-910B", Cards: []Card{{Model: "Ascend-910B", Resource: "huawei.com/Ascend910", Count: 8}}},
		},
		{
			name: "GPUs without a product label",
			node: builder.MakeNode("n").Res("nvidia.com/gpu", "8").Res("nvidia.com/mig-1g.18gb", "2").Obj(),
			want: Node{Unlabelled: []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/mig-1g.18gb"}},
		},
		{
			name: "a vendor's resource, labelled and not",
			node: builder.MakeNode("n").Res("example.com/npu", "4").Label("example.com/npu.product", "NPU-X").Res("example.com/fpga", "2").Obj(),
			want: Node{Product: "NPU-X", Cards: []Card{{Model: "NPU-X", Resource: "example.com/npu", Count: 4}}},
		},
		{
			name: "no cards at all",
			node: builder.MakeNode("n").Res("hugepages-2Mi", "1Gi").Obj(),
			want: Node{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// products and mpsModel are ModelOf's inputs, tested through PodCards below.
			got := Detect(tc.node)
			got.products, got.mpsModel, got.formerMPSModel = nil, "", ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Detect (-want, +got):\n%s", diff)
			}
			// Filter asks Carried rather than detect the node anew.
			for r, q := range tc.node.Status.Allocatable {
				if !q.IsZero() && Carried(tc.node, r) != got.Carries(r) {
					t.Errorf("Carried(%s) = %v, but Detect carries it: %v", r, Carried(tc.node, r), got.Carries(r))
				}
			}
			// Score reads whole cards' models off the product label.
			for _, c := range got.Cards {
				if key, ok := ProductLabel(c.Resource); ok && tc.node.Labels[key] != c.Model {
					t.Errorf("ProductLabel(%s) = %s, labelled %q, but Detect found %s", c.Resource, key, tc.node.Labels[key], c.Model)
				}
			}
		})
	}
}

func TestPodCards(t *testing.T) {
	mig := Detect(builder.MakeNode("n").GPU("NVIDIA-H200", 4).Res("nvidia.com/mig-1g.18gb", "7").Obj())
	tests := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"whole cards", builder.MakePod("ns", "p").GPU(2).Obj(), map[string]int64{"NVIDIA-H200": 2}},
		{"MIG slice", builder.MakePod("ns", "p").Req("nvidia.com/mig-1g.18gb", "1").Obj(), map[string]int64{"NVIDIA-H200/mig-1g.18gb-mixed": 1}},
		{"cpu only", builder.MakePod("ns", "p").Req("cpu", "4").Obj(), nil},
		{"resource the node lacks", builder.MakePod("ns", "p").Req("amd.com/gpu", "1").Obj(), nil},
		{"MPS share", builder.MakePod("ns", "p").Extended(MPSResource, 1).Obj(), map[string]int64{"NVIDIA-H200/mps-0g*1/1": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mig.PodCards(tc.pod)); diff != "" {
				t.Errorf("PodCards (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestPodCardsAfterReslice: a pod is charged by the node's product labels,
// not by what the node has allocatable now, so a node re-sliced under a
// running pod (whole cards gone, MIG slices instead) charges it the same
// model as before, and so does a scheduler started afterwards.
func TestPodCardsAfterReslice(t *testing.T) {
	node := builder.MakeNode("n").GPU("NVIDIA-H200", 2).Obj()
	before := Detect(node)
	delete(node.Status.Allocatable, builder.GPUResource)
	node.Status.Allocatable["nvidia.com/mig-1g.18gb"] = resource.MustParse("7")
	after := Detect(node)
	pod := builder.MakePod("ns", "p").GPU(1).Obj()
	want := map[string]int64{"NVIDIA-H200": 1}
	for name, n := range map[string]Node{"before": before, "after": after} {
		if diff := cmp.Diff(want, n.PodCards(pod)); diff != "" {
			t.Errorf("%s the re-slice (-want, +got):\n%s", name, diff)
		}
	}
	if before.Equal(after) {
		t.Error("a re-slice must count as a change of the node's cards")
	}
	unlabelled := Detect(builder.MakeNode("n").Res("nvidia.com/gpu", "8").Obj())
	if got := unlabelled.PodCards(pod); got != nil {
		t.Errorf("cards without a product have no model, got %v", got)
	}
}
