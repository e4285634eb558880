package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createBoundPods creates pods already on node, as pods left by a crash
// mid-bind are: the scheduler first sees them bound.
func createBoundPods(t *testing.T, node string, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		p.Spec.NodeName = node
	}
	createPods(t, pods...)
}

// evicted tells whether a pod was evicted: marked a disruption target and
// being deleted (no kubelet here finishes it).
func evicted(t *testing.T, ns, name string) bool {
	t.Helper()
	p, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return true // gone
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return p.DeletionTimestamp != nil
		}
	}
	return false
}

// SPEC §2.6: a gang found bound below its min for longer than its Permit
// wait plus staleGangSeconds gives back what it holds, with GangBelowMin;
// gangs at or above min, and gangs whose missing members finished their
// work, are never touched.
func TestStaleGangGivenBack(t *testing.T) {
	createNodes(t, gpuNodes("stale", 1, 8)...)
	s := startSchedulerWith(t, configWith(t,
		"permitWaitingTimeSeconds: 60", "permitWaitingTimeSeconds: 4",
		"staleGangSeconds: 60", "staleGangSeconds: 2"),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
	ns := createGPUNamespace(t, "stale")

	// A crash mid-bind left two of three bound.
	createPodGroup(t, ns, "broken", 3)
	createBoundPods(t, "stale-0", gangPods(ns, "broken", 2, 1)...)
	// At its min, with an elastic pod beyond it.
	createPodGroup(t, ns, "elastic", 1)
	createPods(t, gangPods(ns, "elastic", 2, 1)...)
	// One of two finished its work; the other still runs.
	createPodGroup(t, ns, "finishing", 2)
	createBoundPods(t, "stale-0", gangPods(ns, "finishing", 2, 1)...)
	done, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), "finishing-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done.Status.Phase = corev1.PodSucceeded
	if _, err := env.kube.CoreV1().Pods(ns).UpdateStatus(context.Background(), done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, podsNamed("elastic-0", "elastic-1"))

	waitEvent(t, ns, "GangBelowMin on PodGroup broken", func(e eventsv1.Event) bool {
		return e.Reason == "GangBelowMin" && e.Regarding.Kind == "PodGroup" && e.Regarding.Name == "broken" &&
			strings.Contains(e.Note, "2 of its minMember 3 pods bound")
	})
	waitPodEvent(t, ns, "broken-0", "2 of its minMember 3 pods bound")
	// The events are written as the evictions start: wait for them to end.
	for _, p := range []string{"broken-0", "broken-1"} {
		waitFor(t, "pod "+p+" of the gang bound below its min evicted", func() bool { return evicted(t, ns, p) })
	}
	holdFor(t, holdWindow, func() error {
		for _, p := range []string{"elastic-0", "elastic-1", "finishing-0"} {
			if evicted(t, ns, p) {
				return fmt.Errorf("pod %s was evicted, though its gang is at its min", p)
			}
		}
		return nil
	})
	if m := scrapeMetrics(t, s); !strings.Contains(m, "cardinal_stale_gangs_given_back_total 1") ||
		!strings.Contains(m, "cardinal_stale_gang_evictions_total 2") {
		t.Errorf("metrics do not count one gang given back and two pods evicted:\n%s", grepLines(m, "stale_gang"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
