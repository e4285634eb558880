package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/test/builder"
)

// TestScheduleTimeoutFromPodGroup: a PodGroup's spec.scheduleTimeoutSeconds
// (3 s) bounds how long its placed members wait at Permit, not the
// configuration's 60 s: the member placed while the other is held by a
// member it preempted for gives its reservation back within seconds, and nothing
// binds (SPEC §1.2, §2.2).
func TestScheduleTimeoutFromPodGroup(t *testing.T) {
	ns := createGPUNamespace(t, "pg-timeout")
	createNodes(t, gpuNodes("pg-timeout", 1, 2)...)
	startScheduler(t)

	createPodGroupFrom(t, builder.MakePodGroup(ns, "short", 2).ScheduleTimeout(3).Obj())
	pods := gangPods(ns, "short", 2, 1)
	holdLast(t, ns, ns, pods)
	start := time.Now()
	createPods(t, pods...)

	err := wait.PollUntilContextTimeout(context.Background(), poll, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := env.kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "PodGroup" && e.Regarding.Name == "short" && strings.Contains(e.Note, "gave up its reservation") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the placed member of short did not give up its reservation within 30s of a 3s scheduleTimeoutSeconds")
	}
	t.Logf("reservation given back %s after the pods were created", time.Since(start).Round(100*time.Millisecond))
	if n := boundPerGang(t, ns)["short"]; n != 0 {
		t.Fatalf("%d pods of short bound below its min", n)
	}
}
