package integration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/test/builder"
)

// deleteGracefully deletes a pod with the grace period given; with no
// kubelet to confirm, a bound pod deleted so stays terminating until it is
// deleted again (deletePod, grace 0).
func deleteGracefully(t *testing.T, ns, name string, grace int64) {
	t.Helper()
	err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(grace)})
	if err != nil {
		t.Fatal(err)
	}
}

// SPEC §3.7: a pod being deleted keeps its charge until it is gone, as
// ResourceQuota counts it; it leaves its gang's ranks at once, so the
// gang's replacements wait for their min as any gang does.
func TestTerminatingPodKeepsCharge(t *testing.T) {
	createNodes(t, gpuNodes("terminating", 1, 8)...)
	startScheduler(t)

	t.Run("pod", func(t *testing.T) {
		ns := gpuQueue(t, "terminating-pod", 2, 2, true)
		createPods(t, builder.MakePod(ns, "a").GPU(2).Obj())
		waitBound(t, ns, podsNamed("a"))
		deleteGracefully(t, ns, "a", 600) // a checkpoint on SIGTERM
		createPods(t, builder.MakePod(ns, "b").GPU(2).Obj())
		waitPodEvent(t, ns, "b", "insufficient NVIDIA-H200 quota: requested 2")
		neverBound(t, ns, "b")
		waitQueueCards(t, ns, map[string]int32{h200: 2})
		deletePod(t, ns, "a")
		waitBound(t, ns, podsNamed("b"))
		waitQueueCards(t, ns, map[string]int32{h200: 2})
	})

	t.Run("gang", func(t *testing.T) {
		ns := gpuQueue(t, "terminating-gang", 4, 4, true)
		createPodGroup(t, ns, "g", 2)
		createPods(t, gangPods(ns, "g", 2, 1)...)
		waitBound(t, ns, podsNamed("g-0", "g-1"))
		deleteGracefully(t, ns, "g-0", 600)
		deleteGracefully(t, ns, "g-1", 600)
		// One replacement is not the gang's min: the terminating pods
		// are no longer among it.
		createPods(t, gangPod(ns, "g", 2, 1))
		neverBound(t, ns, "g-2")
		waitQueueCards(t, ns, map[string]int32{h200: 2})
		createPods(t, gangPod(ns, "g", 3, 1))
		waitBound(t, ns, podsNamed("g-2", "g-3"))
		waitQueueCards(t, ns, map[string]int32{h200: 4})
		// A third replacement would take the queue past its capability
		// while the old pods terminate.
		createPods(t, gangPod(ns, "g", 4, 1))
		waitPodEvent(t, ns, "g-4", "insufficient NVIDIA-H200 quota")
		neverBound(t, ns, "g-4")
		deletePod(t, ns, "g-0")
		waitBound(t, ns, podsNamed("g-4"))
		deletePod(t, ns, "g-1")
		waitQueueCards(t, ns, map[string]int32{h200: 3})
	})
}
