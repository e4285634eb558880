package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestCardRequestAdmission: a gang whose card-request cannot fit its
// queue's card quota is held whole, its PodGroup says why, and it is
// admitted when the quota is raised (SPEC §1.2, §3.4).
func TestCardRequestAdmission(t *testing.T) {
	createQueue(t, builder.MakeQueue("gangs").Card(h200, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "card-gang", "gangs")
	createNodes(t, gpuNodes("cg", 2, 4)...)
	startScheduler(t)

	createPodGroupFrom(t, builder.MakePodGroup(ns, "train", 2).Annotation(v1alpha1.CardRequestAnnotation, `{"NVIDIA-H200":4}`).Obj())
	createPods(t, gangPods(ns, "train", 2, 2)...)
	waitEvent(t, ns, "GangHeldByCardQuota on PodGroup train", func(e eventsv1.Event) bool {
		return e.Regarding.Name == "train" && e.Reason == "GangHeldByCardQuota" &&
			strings.Contains(e.Note, "queue gangs has insufficient NVIDIA-H200 quota: requested 4, would use 4, capability 2")
	})
	waitPodEvent(t, ns, "train-0", "gang card-gang/train is held")
	holdBoundAtMost(t, ns, 0)

	q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(context.Background(), "gangs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Cards = []v1alpha1.CardQuota{{Name: h200, Guarantee: 4}}
	if _, err := env.cardinal.SchedulingV1alpha1().Queues().Update(context.Background(), q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, boundCount(2))
	waitQueueCards(t, "gangs", map[string]int32{h200: 4})
}

// TestUnlabelledGPUs: a node whose GPUs carry no product label has no card
// model: an event on the node says so, pods that name no model use its GPUs
// as the plain resource, and pods that name one do not (SPEC §1.4).
func TestUnlabelledGPUs(t *testing.T) {
	createQueue(t, builder.MakeQueue("plain").Capability(builder.GPUResource, "2").Card(h200, 1, 1).Obj())
	ns := createNamespaceInQueue(t, "card-plain", "plain")
	createNodes(t, builder.MakeNode("plain-0").Res(builder.GPUResource, "4").Obj())
	startScheduler(t)

	waitEvent(t, metav1.NamespaceDefault, "UnlabelledCards event on node plain-0", func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "Node" && e.Regarding.Name == "plain-0" && e.Reason == "UnlabelledCards" &&
			strings.Contains(e.Note, "no label nvidia.com/gpu.product")
	})
	createPods(t, cardPods(ns, "named", h200, 1)...)
	waitPodEvent(t, ns, "named-0", "node plain-0's cards have no model (no product label), and the pod asks for NVIDIA-H200")
	createPods(t, cardPods(ns, "any", "", 3)...)
	waitBound(t, ns, boundCount(2))
	holdBoundAtMost(t, ns, 2)
	if bound := boundPods(t, ns); slices.Contains(bound, "named-0") {
		t.Errorf("a pod naming a model bound to a node without models: %v", bound)
	}
}

// TestCardQuotaAcrossRestart: card counts are rebuilt from the cluster
// after a restart, and the queue never goes over its quota afterwards
// (SPEC §3.1).
func TestCardQuotaAcrossRestart(t *testing.T) {
	createQueue(t, builder.MakeQueue("restart-cards").Card(h200, 3, 3).Obj())
	ns := createNamespaceInQueue(t, "card-restart", "restart-cards")
	createNodes(t, gpuNodes("cr", 3, 2)...)
	s := startScheduler(t)
	createPods(t, cardPods(ns, "a", "", 3)...)
	waitBound(t, ns, boundCount(3))
	s.Stop()

	createPods(t, cardPods(ns, "b", "", 3)...)
	startScheduler(t)
	holdBoundAtMost(t, ns, 3)
	waitPodEvent(t, ns, "b-0", "queue restart-cards has insufficient NVIDIA-H200 quota")
}

// TestCardQuotaWithScaledDeployments: Deployments scaled as an HPA scales
// them, in a queue with quota for 3 cards: a pod created beyond the quota
// waits with an event, and scaling another Deployment in gives the quota
// back so the waiting pod binds (SPEC §4.5). Pods are created and deleted
// by kube-controller-manager's ReplicaSet controller.
func TestCardQuotaWithScaledDeployments(t *testing.T) {
	createQueue(t, builder.MakeQueue("hpa").Card(h200, 3, 3).Obj())
	ns := createNamespaceInQueue(t, "card-hpa", "hpa")
	createNodes(t, gpuNodes("hpa", 2, 4)...)
	startScheduler(t)
	ctx := context.Background()
	for _, d := range []*appsv1.Deployment{cardDeployment(ns, "web", h200, 3), cardDeployment(ns, "worker", h200, 0)} {
		if _, err := env.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(t, ns, boundCount(3))

	scale(t, ns, "worker", 1)
	var waiting string
	err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(context.Context) (bool, error) {
		_, pending := appPods(t, ns, "worker")
		if len(pending) == 1 {
			waiting = pending[0]
		}
		return waiting != "", nil
	})
	if err != nil {
		t.Fatal("the scaled-out worker pod never appeared")
	}
	waitPodEvent(t, ns, waiting, "queue hpa has insufficient NVIDIA-H200 quota: requested 1, would use 4, capability 3")
	holdBoundAtMost(t, ns, 3)

	scale(t, ns, "web", 2)
	waitBound(t, ns, podsNamed(waiting))
	holdBoundAtMost(t, ns, 3)
	if bound, _ := appPods(t, ns, "web"); len(bound) != 2 {
		t.Errorf("web has %d pods bound, want 2", len(bound))
	}
	waitQueueCards(t, "hpa", map[string]int32{h200: 3})
}

// TestNodeChangesUnderPods: a node relabelled, re-sliced into MIG and
// removed under running pods crashes nothing; pods for the model that is
// gone wait with an event, the new MIG slices are used within their quota,
// and status shows each model's use (SPEC §3.6).
func TestNodeChangesUnderPods(t *testing.T) {
	createQueue(t, builder.MakeQueue("reshape").Card(h200, 2, 2).Card(mig, 1, 1).Obj())
	ns := createNamespaceInQueue(t, "card-reshape", "reshape")
	createNodes(t, builder.MakeNode("rs-0").GPU(h200, 2).Obj())
	s := startScheduler(t)
	ctx := context.Background()

	createPods(t, cardPods(ns, "whole", h200, 1)...)
	waitBound(t, ns, podsNamed("whole-0"))
	waitQueueCards(t, "reshape", map[string]int32{h200: 1})

	// Re-sliced into MIG: no whole cards left, seven 1g.18gb slices.
	n, err := env.kube.CoreV1().Nodes().Get(ctx, "rs-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(n.Status.Allocatable, builder.GPUResource)
	delete(n.Status.Capacity, builder.GPUResource)
	n.Status.Allocatable[migRes] = *resourceQty("7")
	n.Status.Capacity[migRes] = *resourceQty("7")
	if _, err := env.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPods(t,
		builder.MakePod(ns, "slice-0").Extended(migRes, 1).Obj(),
		builder.MakePod(ns, "slice-1").Extended(migRes, 1).Obj())
	waitBound(t, ns, boundCount(2)) // whole-0 and one slice
	waitPodEvent(t, ns, pendingPodWithPrefix(t, ns, "slice"), "queue reshape has insufficient NVIDIA-H200/mig-1g.18gb-mixed quota: requested 1, would use 2, capability 1")
	// Only now has the scheduler surely seen the re-slice: a pod created
	// right after the node's update could be placed on the node as its
	// informer still showed it, as in any cluster.
	createPods(t, cardPods(ns, "more", h200, 1)...)
	neverBound(t, ns, "more-0")
	waitQueueCards(t, "reshape", map[string]int32{mig: 1})

	// Removed under its pods: the scheduler keeps running.
	if err := env.kube.CoreV1().Nodes().Delete(ctx, "rs-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createPods(t, cardPods(ns, "after", h200, 1)...)
	holdFor(t, holdWindow, func() error {
		if err := s.Exited(); err != nil {
			return fmt.Errorf("the scheduler exited: %v", err)
		}
		return nil
	})
	if s.Exited() != nil {
		t.Fatal("the scheduler exited after the node was removed")
	}
}

// TestCardUnlimitedCPUMemory: with cardUnlimitedCpuMemory, pods that use
// cards are not charged cpu and memory; other pods still are (SPEC §1.5).
func TestCardUnlimitedCPUMemory(t *testing.T) {
	path := configWith(t, "cardUnlimitedCpuMemory: false", "cardUnlimitedCpuMemory: true")
	createQueue(t, builder.MakeQueue("unlimited").Capability(corev1.ResourceCPU, "2").Card(h200, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "card-unlimited", "unlimited")
	createNodes(t, gpuNodes("ul", 1, 4)...)
	startSchedulerWith(t, path)

	createPods(t,
		builder.MakePod(ns, "gpu").Req("cpu", "8").GPU(1).Obj(),
		builder.MakePod(ns, "cpu-0").Req("cpu", "2").Obj(),
		builder.MakePod(ns, "cpu-1").Req("cpu", "1").Obj())
	waitBound(t, ns, podsNamed("gpu", "cpu-0"))
	waitPodEvent(t, ns, "cpu-1", "queue unlimited has insufficient cpu quota: requested 1, would use 3, capability 2")
	neverBound(t, ns, "cpu-1")
}

// TestVolcanoAliases: Volcano's volcano.sh/card.quota on a Queue and
// volcano.sh/card.request on a PodGroup are read as Cardinal's own keys
// (SPEC §1.3); card.name is covered by TestMixedAlternativesRefused.
func TestVolcanoAliases(t *testing.T) {
	q := builder.MakeQueue("volcano").Obj()
	q.Annotations = map[string]string{v1alpha1.VolcanoCardQuotaAnnotation: `{"NVIDIA-H200": 2}`}
	createQueue(t, q)
	ns := createNamespaceInQueue(t, "card-volcano", "volcano")
	createNodes(t, gpuNodes("vc", 2, 4)...)
	startScheduler(t)

	createPods(t, cardPods(ns, "single", h200, 3)...)
	waitBound(t, ns, boundCount(2))
	waitPodEvent(t, ns, pendingPod(t, ns), "queue volcano has insufficient NVIDIA-H200 quota: requested 1, would use 3, capability 2")
	waitQueueCards(t, "volcano", map[string]int32{h200: 2})

	createPodGroupFrom(t, builder.MakePodGroup(ns, "vj", 2).Annotation(v1alpha1.VolcanoCardRequestAnnotation, `{"NVIDIA-H200":2}`).Obj())
	createPods(t, gangPods(ns, "vj", 2, 1)...)
	waitEvent(t, ns, "GangHeldByCardQuota on PodGroup vj", func(e eventsv1.Event) bool {
		return e.Regarding.Name == "vj" && e.Reason == "GangHeldByCardQuota" &&
			strings.Contains(e.Note, "queue volcano has insufficient NVIDIA-H200 quota: requested 2, would use 4, capability 2")
	})
}

// TestCardRequestShareRoundsDown: what the missing members of a gang's min
// need of its PodGroup's card request is their share rounded down, so
// admission never holds for good a gang whose missing pod fits (SPEC §1.2,
// §3.4). A gang of a 2-card and a 1-card pod asks for 3 cards, all its
// queue's capability; its 1-card pod, deleted and created again, finds 1
// card left and binds (a share rounded up, 2 cards, would hold it forever),
// and the queue never goes past its capability.
func TestCardRequestShareRoundsDown(t *testing.T) {
	createQueue(t, builder.MakeQueue("share").Card(h200, 0, 3).Obj())
	ns := createNamespaceInQueue(t, "card-share", "share")
	createNodes(t, gpuNodes("cs", 1, 4)...)
	startScheduler(t)

	createPodGroupFrom(t, builder.MakePodGroup(ns, "g", 2).Annotation(v1alpha1.CardRequestAnnotation, `{"NVIDIA-H200":3}`).Obj())
	createPods(t, gangPod(ns, "g", 0, 2), gangPod(ns, "g", 1, 1))
	waitBound(t, ns, podsNamed("g-0", "g-1"))

	deletePod(t, ns, "g-1")
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := env.kube.CoreV1().Pods(ns).Get(ctx, "g-1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("g-1 not gone: %v", err)
	}
	createPods(t, gangPod(ns, "g", 1, 1))
	waitBound(t, ns, podsNamed("g-1"))
	waitQueueCards(t, "share", map[string]int32{h200: 3})
	holdBoundAtMost(t, ns, 2)
}
