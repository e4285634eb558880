package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/test/builder"
)

// TestGangAllOrNothing: a gang of 4 one-GPU pods on 3 free GPUs binds
// nothing; once a node is added, all 4 bind (SPEC §2.1).
func TestGangAllOrNothing(t *testing.T) {
	ns := createGPUNamespace(t, "gang-aon")
	createNodes(t, builder.MakeNode("aon-0").GPU("NVIDIA-H200", 3).Obj())
	startScheduler(t)

	createPodGroup(t, ns, "train", 4)
	createPods(t, gangPods(ns, "train", 4, 1)...)
	holdBoundCounts(t, ns, map[string]int{}, holdWindow)
	waitGangEvent(t, ns, "train", "GangUnschedulable")
	waitEvent(t, ns, "FailedScheduling event on a pod of gang train naming the gang", func(e eventsv1.Event) bool {
		return strings.HasPrefix(e.Regarding.Name, "train-") && e.Reason == "FailedScheduling" && strings.Contains(e.Note, "gang "+ns+"/train")
	})
	waitPodGroup(t, ns, "train", "waiting reason in numbers", func(pg *schedv1alpha1.PodGroup) bool {
		reason := pg.Annotations["cardinal.dev/waiting-reason"]
		return pg.Status.Phase == schedv1alpha1.PodGroupPending &&
			(strings.HasPrefix(reason, "0 of minMember 4 pods scheduled; pod ") ||
				strings.HasPrefix(reason, "0 of minMember 4 pods scheduled; gang "+ns+"/train is backing off until "))
	})

	createNodes(t, builder.MakeNode("aon-1").GPU("NVIDIA-H200", 1).Obj())
	waitBound(t, ns, gangsBound(map[string]int{"train": 4}))
	waitPodGroup(t, ns, "train", "Scheduling with 4 scheduled", func(pg *schedv1alpha1.PodGroup) bool {
		_, waiting := pg.Annotations["cardinal.dev/waiting-reason"]
		return pg.Status.Phase == schedv1alpha1.PodGroupScheduling && pg.Annotations["cardinal.dev/scheduled"] == "4" && !waiting
	})
}

// TestPodsBeforeTheirPodGroup: pods that name a PodGroup not made yet
// wait, none scheduled alone (scheduler-plugins #358); once it is made,
// the gang binds whole at once, woken by its PodGroup rather than by a
// retry minutes later.
func TestPodsBeforeTheirPodGroup(t *testing.T) {
	ns := createGPUNamespace(t, "gang-late-group")
	createNodes(t, builder.MakeNode("late-0").GPU("NVIDIA-H200", 4).Obj())
	startScheduler(t)

	createPods(t, gangPods(ns, "late", 4, 1)...)
	holdBoundCounts(t, ns, map[string]int{}, holdWindow)
	createPodGroup(t, ns, "late", 4)
	waitBound(t, ns, gangsBound(map[string]int{"late": 4}), within(15*time.Second))
}

// waitPodGroup waits until the PodGroup satisfies cond.
func waitPodGroup(t *testing.T, ns, name, what string, cond func(*schedv1alpha1.PodGroup) bool) {
	t.Helper()
	var last *schedv1alpha1.PodGroup
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pg, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = pg
		return cond(pg), nil
	})
	if err != nil {
		t.Fatalf("PodGroup %s/%s never showed %s; last status %+v, annotations %v", ns, name, what, last.Status, last.Annotations)
	}
}

// TestGangsDoNotDeadlock: 6 gangs of 4 one-GPU pods, created interleaved, on
// 16 GPUs: exactly 4 gangs bind whole and 2 bind nothing, and no gang is
// ever partly bound (SPEC §2.3).
func TestGangsDoNotDeadlock(t *testing.T) {
	ns := createGPUNamespace(t, "gang-deadlock")
	createNodes(t, gpuNodes("dl", 4, 4)...)
	startScheduler(t)

	for g := range 6 {
		createPodGroup(t, ns, fmt.Sprintf("g%d", g), 4)
	}
	for i := range 4 {
		for g := range 6 {
			createPods(t, gangPod(ns, fmt.Sprintf("g%d", g), i, 1))
		}
	}
	var counts map[string]int
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		counts = boundPerGang(t, ns)
		whole := 0
		for _, n := range counts {
			if n == 4 {
				whole++
			}
		}
		return whole == 4, nil
	})
	if err != nil {
		t.Fatalf("want 4 whole gangs, got %v", counts)
	}
	// No gang partly bound, over a window.
	holdFor(t, 2*holdWindow, func() error {
		counts := boundPerGang(t, ns)
		total := 0
		for g, n := range counts {
			if n != 4 {
				return fmt.Errorf("gang %s is partly bound (%d of 4): %v", g, n, counts)
			}
			total += n
		}
		if len(counts) != 4 || total != 16 {
			return fmt.Errorf("want exactly 4 whole gangs on 16 GPUs, got %v", counts)
		}
		return nil
	})
}

// TestMinFirst: the min members of every gang are placed before the elastic
// pods of any gang (SPEC §2.4). The gangs exist before the scheduler starts,
// so it sees them together.
func TestMinFirst(t *testing.T) {
	tests := []struct {
		name   string
		gangs  map[string][2]int // name -> {min, pods}
		expect map[string]int
	}{
		{"equal gangs", map[string][2]int{"a": {5, 10}, "b": {5, 10}}, map[string]int{"a": 5, "b": 5}},
		{"small min beside full gang", map[string][2]int{"c": {2, 8}, "d": {8, 8}}, map[string]int{"c": 2, "d": 8}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := createGPUNamespace(t, fmt.Sprintf("gang-minfirst-%d", i))
			createNodes(t, gpuNodes(fmt.Sprintf("mf%d", i), 5, 2)...)
			for name, g := range tc.gangs {
				createPodGroup(t, ns, name, int32(g[0]))
			}
			for name, g := range tc.gangs {
				createPods(t, gangPods(ns, name, g[1], 1)...)
			}
			startScheduler(t)
			waitBound(t, ns, gangsBound(tc.expect))
			holdBoundCounts(t, ns, tc.expect, holdWindow)
		})
	}
}

// TestElasticFill: a gang alone grows past its min onto idle GPUs (SPEC §1.2).
func TestElasticFill(t *testing.T) {
	ns := createGPUNamespace(t, "gang-elastic")
	createNodes(t, gpuNodes("ef", 5, 2)...)
	startScheduler(t)
	createPodGroup(t, ns, "c", 2)
	createPods(t, gangPods(ns, "c", 12, 1)...)
	waitBound(t, ns, gangsBound(map[string]int{"c": 10}))
	holdBoundCounts(t, ns, map[string]int{"c": 10}, holdWindow)
}

// TestGangGivesBackOnFailure: a gang that cannot complete holds nothing: a
// pod that needs the room it tried binds afterwards (SPEC §2.2).
func TestGangGivesBackOnFailure(t *testing.T) {
	ns := createGPUNamespace(t, "gang-timeout")
	createNodes(t, builder.MakeNode("to-0").GPU("NVIDIA-H200", 4).Obj())
	startScheduler(t)

	// Three members fit; the fourth can never be placed (no node has its label).
	createPodGroup(t, ns, "stuck", 4)
	pods := gangPods(ns, "stuck", 4, 1)
	pods[3].Spec.NodeSelector = map[string]string{"pool": "missing"}
	createPods(t, pods...)
	waitGangEvent(t, ns, "stuck", "GangUnschedulable")

	createPods(t, builder.MakePod(ns, "single").Req("cpu", "100m").GPU(4).Obj())
	waitBound(t, ns, podsNamed("single"))
	holdBoundCounts(t, ns, map[string]int{"": 1}, holdWindow)
}

// TestLargeGang: a gang of 200 pods binds completely.
func TestLargeGang(t *testing.T) {
	ns := createGPUNamespace(t, "gang-large")
	createNodes(t, gpuNodes("lg", 25, 8)...)
	startScheduler(t)
	createPodGroup(t, ns, "big", 200)
	start := time.Now()
	createPods(t, gangPods(ns, "big", 200, 1)...)
	waitBound(t, ns, gangsBound(map[string]int{"big": 200}), within(3*waitTimeout))
	t.Logf("gang of 200 bound in %v after its pods were created (creation took part of it)", time.Since(start).Round(time.Millisecond))
}

// waitGangEvent waits for a warning event with reason on the PodGroup.
func waitGangEvent(t *testing.T, ns, group, reason string) {
	t.Helper()
	waitEvent(t, ns, fmt.Sprintf("%s event on PodGroup %s", reason, group), func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "PodGroup" && e.Regarding.Name == group && e.Reason == reason && e.Type == corev1.EventTypeWarning
	})
}

// TestPodGroupStatusPutBack: what Cardinal writes on a PodGroup (its phase,
// cardinal.dev/scheduled and cardinal.dev/waiting-reason) comes back when
// another writer changes it, though such a change looks like the echo of
// Cardinal's own write and is only asked for a second later; the gang's
// reason stays readable (SPEC §2.5) and nothing of it binds below min.
func TestPodGroupStatusPutBack(t *testing.T) {
	ns := createGPUNamespace(t, "pg-put-back")
	createNodes(t, builder.MakeNode("pg-put-back-0").GPU("NVIDIA-H200", 8).Obj())
	startScheduler(t)
	createPodGroup(t, ns, "g", 2)
	createPods(t, gangPod(ns, "g", 0, 1))
	shown := func(pg *schedv1alpha1.PodGroup) bool {
		return strings.HasPrefix(pg.Annotations[podgroupstatus.WaitingReasonAnnotation], "1 of minMember 2 pods exist") &&
			pg.Annotations[podgroupstatus.ScheduledAnnotation] == "0" && pg.Status.Phase == schedv1alpha1.PodGroupPending
	}
	waitPodGroup(t, ns, "g", "why it waits, 0 scheduled, Pending", shown)

	ctx := context.Background()
	pgs := podGroups().SchedulingV1alpha1().PodGroups(ns)
	pg, err := pgs.Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg.Annotations[podgroupstatus.WaitingReasonAnnotation], pg.Annotations[podgroupstatus.ScheduledAnnotation] = "edited", "7"
	if pg, err = pgs.Update(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg.Status.Phase = schedv1alpha1.PodGroupRunning
	if _, err := pgs.UpdateStatus(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGroup(t, ns, "g", "its status and annotations put back", shown)
	neverBound(t, ns, "g-0")
}
