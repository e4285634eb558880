package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/test/builder"
)

// TestOneVictimWhileAnotherTerminates: on a node of 3 cards full of
// low-priority pods, a first high-priority pod evicts one, which keeps
// terminating; a second evicts one more, not two: the card of the pod
// terminating is the first preemptor's, counted once, and not also the
// terminating pod's (SPEC §5.3, §5.8). The third low pod keeps running.
func TestOneVictimWhileAnotherTerminates(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "one-victim", 3, 3, true)
	createNodes(t, gpuNodes("onevictim", 1, 3)...)
	startScheduler(t)
	low := prioritized(lowPriority, builder.MakePod(ns, "low-0").GPU(1).Obj(), builder.MakePod(ns, "low-1").GPU(1).Obj(), builder.MakePod(ns, "low-2").GPU(1).Obj())
	for _, p := range low {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](300) // no kubelet ends it
	}
	createPods(t, low...)
	waitBound(t, ns, podsNamed("low-0", "low-1", "low-2"))

	terminating := func(ctx context.Context) (int, error) {
		n := 0
		for _, p := range low {
			got, err := env.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return 0, err
			}
			if got.DeletionTimestamp != nil {
				n++
			}
		}
		return n, nil
	}
	waitTerminating := func(want int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
			n, err := terminating(ctx)
			return n >= want, err
		})
		if err != nil {
			t.Fatalf("waiting for %d low pods evicted: %v", want, err)
		}
	}
	createPods(t, prioritized(highPriority, builder.MakePod(ns, "high-0").GPU(1).Obj())...)
	waitTerminating(1)
	createPods(t, prioritized(highPriority, builder.MakePod(ns, "high-1").GPU(1).Obj())...)
	waitTerminating(2)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, err := terminating(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("%d low pods evicted for two one-card pods, want 2", n)
		}
		time.Sleep(poll)
	}
}
