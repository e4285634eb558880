package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// TestScheduleTimeoutFromPodGroup: a PodGroup's spec.scheduleTimeoutSeconds
// (3 s) bounds how long its placed members wait at Permit, not the
// configuration's 60 s: the member placed while the other is held by a
// scheduling gate gives its reservation back within seconds, and nothing
// binds (SPEC §1.2, §2.2).
func TestScheduleTimeoutFromPodGroup(t *testing.T) {
	ns := createGPUNamespace(t, "pg-timeout")
	createNodes(t, gpuNodes("pg-timeout", 1, 2)...)
	startScheduler(t)

	pg := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "short"},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: 2, ScheduleTimeoutSeconds: ptr.To[int32](3)},
	}
	if _, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := gangPods(ns, "short", 2, 1)
	pods[1].Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "cardinal.dev/test-hold"}}
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
