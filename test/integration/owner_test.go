package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodWaitsForItsOwner: a pending pod whose controller is a Job the
// scheduler has not seen waits, with an event naming the Job (its
// cardinal.dev/preemptibility label would decide how the pod is placed,
// and a pod placed preemptible stays so: SPEC §3.7, §5.1); and a pod owned
// by another project's kind of the same name (apps.kruise.io) is not made
// to wait for an object Cardinal does not read.
func TestPodWaitsForItsOwner(t *testing.T) {
	createNodes(t, gpuNodes("owner", 1, 4)...)
	startScheduler(t)
	ns := gpuQueue(t, "owner", 4, 4, true)
	waiting := cardPods(ns, "waits", "", 1)[0]
	waiting.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "not-yet",
		UID: "00000000-0000-0000-0000-0000000000a1", Controller: ptr.To(true)}}
	other := cardPods(ns, "kruise", "", 1)[0]
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "web",
		UID: "00000000-0000-0000-0000-0000000000a2", Controller: ptr.To(true)}}
	createPods(t, waiting, other)
	waitBound(t, ns, podsNamed(other.Name))
	waitPodEvent(t, ns, waiting.Name, "its owner Job "+ns+"/not-yet is not seen yet")
	neverBound(t, ns, waiting.Name)
}
