package integration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/test/builder"
)

// TestMPSNamedAfterWholeCard: MPS shares are named after the whole card's
// memory in GiB, rounded to the nearest (SPEC §1.4): an NVIDIA-H800 of
// 81559 MiB split in 2 is NVIDIA-H800/mps-80g*1/2, and a queue with quota
// for that name places its pods up to it. A queue that still lists the
// name Cardinal gave the share before gets a warning that names the new
// one.
func TestMPSNamedAfterWholeCard(t *testing.T) {
	const now, former = "NVIDIA-H800/mps-80g*1/2", "NVIDIA-H800/mps-39g*1/2"
	createQueue(t, builder.MakeQueue("mps-h800").Card(now, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "mps-h800", "mps-h800")
	createQueue(t, builder.MakeQueue("mps-former").Card(former, 2, 2).Obj())
	createNodes(t, builder.MakeNode("mps-h800").Res(cardmodel.MPSResource, "4").Label("nvidia.com/gpu.product", "NVIDIA-H800").
		Label(cardmodel.MPSReplicasLabel, "2").Label(cardmodel.NVIDIAMemoryLabel, "81559").Obj())
	startScheduler(t)

	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, builder.MakePod(ns, "mps-"+string(rune('0'+i))).Extended(cardmodel.MPSResource, 1).Obj())
	}
	createPods(t, pods...)
	waitBound(t, ns, boundCount(2))
	holdBoundAtMost(t, ns, 2)
	waitQueueCards(t, "mps-h800", map[string]int32{now: 2})
	waitPodEvent(t, ns, pendingPod(t, ns), "queue mps-h800 has insufficient "+now+" quota: requested 1, would use 3, capability 2")
	waitEvent(t, metav1.NamespaceDefault, "RenamedCardModel on Queue mps-former naming "+now, func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "Queue" && e.Regarding.Name == "mps-former" && e.Reason == "RenamedCardModel" &&
			strings.Contains(e.Note, former+" is now named "+now)
	})
}
