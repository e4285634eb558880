package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// Priority classes the preemption tests use, created once per package run.
const (
	lowPriority  = "cardinal-test-low"  // 10
	midPriority  = "cardinal-test-mid"  // 500
	highPriority = "cardinal-test-high" // 1000
)

func ensurePriorityClasses(t *testing.T) {
	t.Helper()
	for name, v := range map[string]int32{lowPriority: 10, midPriority: 500, highPriority: 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
		if _, err := env.kube.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// podGroupWith makes a PodGroup with labels.
func podGroupWith(t *testing.T, ns, name string, minMember int32, labels map[string]string) {
	t.Helper()
	createPodGroupFrom(t, builder.MakePodGroup(ns, name, minMember).Labels(labels).Obj())
}

// prioritized gives pods a priority class.
func prioritized(class string, pods ...*corev1.Pod) []*corev1.Pod {
	for _, p := range pods {
		p.Spec.PriorityClassName = class
	}
	return pods
}

// holdCountsWithin checks, at every poll over window, that each gang's
// bound pods stay within [lo, hi]: the way a test asserts that a gang is
// never left partly running.
func holdCountsWithin(t *testing.T, ns string, window time.Duration, bounds map[string][2]int) {
	t.Helper()
	holdFor(t, window, func() error {
		got := boundPerGang(t, ns)
		for g, b := range bounds {
			if n := got[g]; n < b[0] || n > b[1] {
				return fmt.Errorf("gang %s has %d pods bound, want between %d and %d throughout (bound: %v)", g, n, b[0], b[1], got)
			}
		}
		return nil
	})
}

// waitVictimEvent waits for a Preempted or Reclaimed event on a pod of
// prefix in ns whose note contains want.
func waitVictimEvent(t *testing.T, ns, prefix, reason, want string) {
	t.Helper()
	waitEvent(t, ns, fmt.Sprintf("%s event on a pod %s* saying %q", reason, prefix, want), func(e eventsv1.Event) bool {
		return strings.HasPrefix(e.Regarding.Name, prefix) && e.Reason == reason && strings.Contains(e.Note, want)
	})
}

// wholeGangs counts the gangs of names that run all their size pods, from
// boundPerGang's count; a gang running some but not all is an error.
func wholeGangs(per map[string]int, size int, names ...string) (int, error) {
	whole := 0
	for _, g := range names {
		switch per[g] {
		case size:
			whole++
		case 0:
		default:
			return 0, fmt.Errorf("gang %s runs %d of its %d pods", g, per[g], size)
		}
	}
	return whole, nil
}

// slowToGo makes n one-card pods in ns that, deleted, terminate until the
// test ends them (endTerminating): no kubelet does. It waits until all are
// bound.
func slowToGo(t *testing.T, ns string, n int) {
	t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		p := builder.MakePod(ns, fmt.Sprintf("a-%d", i)).Req("cpu", "100m").GPU(1).Obj()
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](300)
		pods = append(pods, p)
	}
	createPods(t, pods...)
	waitBound(t, ns, boundCount(n))
}

// terminatingIn names the pods of ns being deleted.
func terminatingIn(t *testing.T, ns string) []string {
	t.Helper()
	return podsWhere(t, ns, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// waitTerminatingIn waits until at least n pods of ns are being deleted.
func waitTerminatingIn(t *testing.T, ns string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		return len(terminatingIn(t, ns)) >= n, nil
	})
	if err != nil {
		t.Fatalf("%d pods of %s evicted, want %d", len(terminatingIn(t, ns)), ns, n)
	}
}

// endTerminating ends the pods of ns being deleted, as their kubelet would.
func endTerminating(t *testing.T, ns string) {
	t.Helper()
	for _, name := range terminatingIn(t, ns) {
		if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitRefusedReclaim waits for a pod of ns to say its gang found nothing
// it may evict.
func waitRefusedReclaim(t *testing.T, ns string) {
	t.Helper()
	waitEvent(t, ns, "refused reclaim", func(e eventsv1.Event) bool {
		return e.Reason == "FailedScheduling" && strings.Contains(e.Note, "may evict")
	})
}

// countEvents counts events in ns with reason.
func countEvents(t *testing.T, ns, reason string) int {
	t.Helper()
	evs, err := env.kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// gpuQueue makes a queue with H200 quota of guarantee and capability, and
// a namespace of its own in it.
func gpuQueue(t *testing.T, name string, guarantee, capability int32, reclaimable bool) string {
	t.Helper()
	q := builder.MakeQueue(name).Card(h200, guarantee, capability).Obj()
	q.Spec.Reclaimable = &reclaimable
	createQueue(t, q)
	return createNamespaceInQueue(t, name, name)
}

// labelled sets a label on pods.
func labelled(k, v string, pods ...*corev1.Pod) []*corev1.Pod {
	for _, p := range pods {
		p.Labels[k] = v
	}
	return pods
}

var _ = v1alpha1.PreemptibilityLabel

// waitGangNote waits for an event with reason on the PodGroup whose note
// contains want.
func waitGangNote(t *testing.T, ns, group, reason, want string) {
	t.Helper()
	waitEvent(t, ns, fmt.Sprintf("%s event on PodGroup %s saying %q", reason, group, want), func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "PodGroup" && e.Regarding.Name == group && e.Reason == reason && strings.Contains(e.Note, want)
	})
}

// scrapeMetrics reads the scheduler's /metrics; the scheduler must be
// started with /metrics among --authorization-always-allow-paths.
func scrapeMetrics(t *testing.T, s *controlplane.Scheduler) string {
	t.Helper()
	body, err := tryScrape(s)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// tryScrape reads the scheduler's /metrics, or says why it could not.
func tryScrape(s *controlplane.Scheduler) (string, error) {
	body, err := s.Get(context.Background(), "/metrics")
	return string(body), err
}
