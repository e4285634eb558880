package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

func createQueue(t *testing.T, q *v1alpha1.Queue) {
	t.Helper()
	ctx := context.Background()
	if _, err := env.cardinal.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.cardinal.SchedulingV1alpha1().Queues().Delete(ctx, q.Name, metav1.DeleteOptions{}) })
}

func cpuPods(ns, prefix, queue string, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, builder.MakePod(ns, fmt.Sprintf("%s-%d", prefix, i)).Label(v1alpha1.QueueLabel, queue).Req("cpu", "1").Obj())
	}
	return out
}

func boundPods(t *testing.T, ns string) []string {
	t.Helper()
	return podsWhere(t, ns, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" && p.DeletionTimestamp == nil })
}

// podsWhere names the pods of ns that keep accepts.
func podsWhere(t *testing.T, ns string, keep func(*corev1.Pod) bool) []string {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range pods.Items {
		if keep(&pods.Items[i]) {
			out = append(out, pods.Items[i].Name)
		}
	}
	return out
}

// holdBoundAtMost checks that never more than n pods of ns are bound over the window.
func holdBoundAtMost(t *testing.T, ns string, n int) {
	t.Helper()
	holdFor(t, holdWindow, func() error {
		if got := boundPods(t, ns); len(got) > n {
			return fmt.Errorf("%d pods bound, more than %d: %v", len(got), n, got)
		}
		return nil
	})
}

// waitPodEvent waits for an event on a pod whose note contains want.
func waitPodEvent(t *testing.T, ns, pod, want string) {
	t.Helper()
	waitEvent(t, ns, fmt.Sprintf("event on pod %s containing %q", pod, want), func(e eventsv1.Event) bool {
		return e.Regarding.Name == pod && strings.Contains(e.Note, want)
	})
}

// waitEvent waits for an event in ns that match accepts, and lists the
// namespace's events when none comes.
func waitEvent(t *testing.T, ns, what string, match func(eventsv1.Event) bool) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		evs, err := env.kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			seen = append(seen, e.Regarding.Kind+"/"+e.Regarding.Name+": "+e.Reason+": "+e.Note)
			if match(e) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s in %s; events:\n%s", what, ns, strings.Join(seen, "\n"))
	}
}

// TestQueueCapability: 6 one-cpu pods in a queue capped at 4 cpu: exactly 4
// bind and the others wait with an event in numbers; deleting a bound pod
// lets exactly one more bind (SPEC §3.1).
func TestQueueCapability(t *testing.T) {
	ns := createNamespace(t, "queue-cap")
	createQueue(t, builder.MakeQueue("cap").Capability(corev1.ResourceCPU, "4").Obj())
	createNodes(t, builder.MakeNode("cap-0").Obj())
	startScheduler(t)

	createPods(t, cpuPods(ns, "p", "cap", 6)...)
	bound := waitBound(t, ns, boundCount(4)).names()
	holdBoundAtMost(t, ns, 4)
	pending := ""
	for _, p := range cpuPods(ns, "p", "cap", 6) {
		if !slices.Contains(bound, p.Name) {
			pending = p.Name
		}
	}
	waitPodEvent(t, ns, pending, "queue cap has insufficient cpu quota: requested 1, would use 5, capability 4")

	if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), bound[0], metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, boundCount(4))
	holdBoundAtMost(t, ns, 4)
	waitQueueStatus(t, "cap", "cpu=4", func(q *v1alpha1.Queue) bool {
		return q.Status.Allocated.Cpu().Cmp(*q.Spec.Capability.Cpu()) == 0
	})
}

// TestQueueCapabilityAcrossRestart: pods created while the scheduler is down
// never take the queue past its capability when it comes back (SPEC §3.1).
func TestQueueCapabilityAcrossRestart(t *testing.T) {
	ns := createNamespace(t, "queue-restart")
	createQueue(t, builder.MakeQueue("restart").Capability(corev1.ResourceCPU, "3").Obj())
	createNodes(t, builder.MakeNode("restart-0").Obj())
	s := startScheduler(t)
	createPods(t, cpuPods(ns, "a", "restart", 2)...)
	waitBound(t, ns, boundCount(2))
	s.Stop()

	createPods(t, cpuPods(ns, "b", "restart", 4)...)
	startScheduler(t)
	waitBound(t, ns, boundCount(3))
	holdBoundAtMost(t, ns, 3)
}

// TestGangHeldByQueue: a gang whose min exceeds its queue's capability binds
// nothing and its PodGroup says why (SPEC §3.4).
func TestGangHeldByQueue(t *testing.T) {
	ns := createNamespace(t, "queue-gang")
	createQueue(t, builder.MakeQueue("small").Capability(corev1.ResourceCPU, "2").Obj())
	createNodes(t, builder.MakeNode("qg-0").Obj())
	startScheduler(t)

	createPodGroup(t, ns, "big", 3)
	var pods []*corev1.Pod
	for _, p := range cpuPods(ns, "big", "small", 3) {
		pods = append(pods, withLabel(p, "scheduling.x-k8s.io/pod-group", "big"))
	}
	createPods(t, pods...)
	waitGangEvent(t, ns, "big", "GangHeldByQueue")
	holdBoundAtMost(t, ns, 0)

	// A held gang is not waiting to be placed: it does not keep another
	// gang's elastic pods waiting for its min.
	createPodGroup(t, ns, "grow", 1)
	var grow []*corev1.Pod
	for i := range 3 {
		grow = append(grow, builder.MakePod(ns, fmt.Sprintf("grow-%d", i)).Label("scheduling.x-k8s.io/pod-group", "grow").Req("cpu", "1").Obj())
	}
	createPods(t, grow...)
	waitBound(t, ns, podsNamed("grow-0", "grow-1", "grow-2"))
	if got := boundPerGang(t, ns)["big"]; got != 0 {
		t.Errorf("held gang has %d pods bound", got)
	}
}

// TestNonPreemptibleUsesOnlyGuarantee: a non-preemptible pod is refused
// beyond its queue's guarantee while a preemptible one may borrow up to the
// capability (SPEC §3.5).
func TestNonPreemptibleUsesOnlyGuarantee(t *testing.T) {
	ns := createNamespace(t, "queue-nonpre")
	createQueue(t, builder.MakeQueue("np").Guarantee(corev1.ResourceCPU, "2").Capability(corev1.ResourceCPU, "8").Obj())
	createNodes(t, builder.MakeNode("np-0").Obj())
	startScheduler(t)

	np := func(name string) *corev1.Pod {
		return builder.MakePod(ns, name).Label(v1alpha1.QueueLabel, "np").Label(v1alpha1.PreemptibilityLabel, v1alpha1.NonPreemptible).Req("cpu", "1").Obj()
	}
	createPods(t, np("np-0"), np("np-1"), np("np-2"))
	waitBound(t, ns, podsNamed("np-0", "np-1"))
	waitPodEvent(t, ns, "np-2", "queue np: non-preemptible pods may use only its guarantee of cpu: requested 1, would use 3, guarantee 2")
	neverBound(t, ns, "np-2")

	borrow := builder.MakePod(ns, "borrow").Label(v1alpha1.QueueLabel, "np").Label(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible).Req("cpu", "3").Obj()
	createPods(t, borrow)
	waitBound(t, ns, podsNamed("borrow"))
}

// TestUnknownQueue: a pod naming a queue that does not exist stays Pending
// with an event that says so (SPEC §1.1).
func TestUnknownQueue(t *testing.T) {
	ns := createNamespace(t, "queue-unknown")
	createNodes(t, builder.MakeNode("uq-0").Obj())
	startScheduler(t)
	createPods(t, builder.MakePod(ns, "lost").Label(v1alpha1.QueueLabel, "no-such-queue").Req("cpu", "1").Obj())
	waitPodEvent(t, ns, "lost", "queue no-such-queue does not exist")
	neverBound(t, ns, "lost")
}

// TestQueueStatusFollowsPods: allocated matches the bound pods after binds,
// deletions and completions.
func TestQueueStatusFollowsPods(t *testing.T) {
	ns := createNamespace(t, "queue-status")
	createQueue(t, builder.MakeQueue("st").Guarantee(corev1.ResourceCPU, "1").Capability(corev1.ResourceCPU, "10").Obj())
	createNodes(t, builder.MakeNode("st-0").Obj())
	startScheduler(t)
	createPods(t, cpuPods(ns, "s", "st", 3)...)
	waitBound(t, ns, boundCount(3))
	waitQueueStatus(t, "st", "allocated cpu 3 and over its deserved share? no", func(q *v1alpha1.Queue) bool {
		return q.Status.Allocated.Cpu().String() == "3" && q.Status.AllocatedSummary == "cpu=3"
	})

	ctx := context.Background()
	if err := env.kube.CoreV1().Pods(ns).Delete(ctx, "s-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitQueueStatus(t, "st", "allocated cpu 2 after a deletion", func(q *v1alpha1.Queue) bool {
		return q.Status.Allocated.Cpu().String() == "2"
	})
	p, err := env.kube.CoreV1().Pods(ns).Get(ctx, "s-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodSucceeded
	if _, err := env.kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQueueStatus(t, "st", "allocated cpu 1 after a completion", func(q *v1alpha1.Queue) bool {
		c := meta.FindStatusCondition(q.Status.Conditions, "OverCapability")
		return q.Status.Allocated.Cpu().String() == "1" && c != nil && c.Status == metav1.ConditionFalse
	})

	// Lower the capability under the running pod: shown as over capability, nothing crashes.
	q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(ctx, "st", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Guarantee = nil
	q.Spec.Capability[corev1.ResourceCPU] = *resourceQty("500m")
	if _, err := env.cardinal.SchedulingV1alpha1().Queues().Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQueueStatus(t, "st", "OverCapability", func(q *v1alpha1.Queue) bool {
		c := meta.FindStatusCondition(q.Status.Conditions, "OverCapability")
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "cpu uses 1 of 500m")
	})
}

func waitQueueStatus(t *testing.T, name, what string, cond func(*v1alpha1.Queue) bool) {
	t.Helper()
	var last *v1alpha1.Queue
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = q
		return cond(q), nil
	})
	if err != nil {
		t.Fatalf("queue %s never showed %s; last status %+v", name, what, last.Status)
	}
}

func withLabel(p *corev1.Pod, k, v string) *corev1.Pod {
	p.Labels[k] = v
	return p
}

// TestShrinkAndQueueDeletion: a node removed and a Queue deleted under
// running pods crash nothing: the queue is shown over its deserved share,
// new pods of a deleted queue wait with an event, and bind once it is back
// (SPEC §3.6).
func TestShrinkAndQueueDeletion(t *testing.T) {
	ns := createNamespace(t, "queue-shrink")
	createQueue(t, builder.MakeQueue("shrink").Obj())
	createNodes(t, builder.MakeNode("shrink-0").Res("cpu", "4").Obj(), builder.MakeNode("shrink-1").Res("cpu", "4").Obj())
	s := startScheduler(t, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
	createPods(t, cpuPods(ns, "p", "shrink", 6)...)
	waitBound(t, ns, boundCount(6))

	ctx := context.Background()
	if err := env.kube.CoreV1().Nodes().Delete(ctx, "shrink-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQueueStatus(t, "shrink", "OverDeserved after a node left", func(q *v1alpha1.Queue) bool {
		c := meta.FindStatusCondition(q.Status.Conditions, "OverDeserved")
		return c != nil && c.Status == metav1.ConditionTrue
	})

	if err := env.cardinal.SchedulingV1alpha1().Queues().Delete(ctx, "shrink", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler learns of the deletion through its informer: a pod
	// created before it has may still be placed. Its metrics show when the
	// queue is gone from what it decides with.
	err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(context.Context) (bool, error) {
		return !strings.Contains(scrapeMetrics(t, s), `cardinal_queue_allocated{queue="shrink"`), nil
	})
	if err != nil {
		t.Fatalf("the scheduler still decides with the deleted Queue shrink: %v", err)
	}
	createPods(t, builder.MakePod(ns, "late").Label(v1alpha1.QueueLabel, "shrink").Req("cpu", "100m").Obj())
	waitPodEvent(t, ns, "late", "queue shrink does not exist")
	neverBound(t, ns, "late")
	if err := s.Exited(); err != nil {
		t.Fatalf("scheduler stopped: %v", err)
	}

	createQueue(t, builder.MakeQueue("shrink").Obj())
	waitBound(t, ns, podsNamed("late"))
}

// TestQueueResolution: a pod's queue is its PodGroup's label, else its own,
// else its namespace's (SPEC §1.1), seen through which queue's capability
// refuses it; an invalid preemptibility label falls back to the priority
// rule and leaves a warning event (SPEC §5.1).
func TestQueueResolution(t *testing.T) {
	ns := createNamespace(t, "queue-resolve")
	ctx := context.Background()
	nsObj, err := env.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[v1alpha1.QueueLabel] = "from-ns"
	if _, err := env.kube.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"from-ns", "from-pod", "from-pg"} {
		createQueue(t, builder.MakeQueue(q).Capability(corev1.ResourceCPU, "1").Obj())
	}
	createNodes(t, builder.MakeNode("resolve-0").Obj())
	startScheduler(t)

	big := func(name string) *corev1.Pod {
		return builder.MakePod(ns, name).Label(v1alpha1.PreemptibilityLabel, "sometimes").Req("cpu", "2").Obj()
	}
	createPodGroupFrom(t, builder.MakePodGroup(ns, "g", 1).Label(v1alpha1.QueueLabel, "from-pg").Obj())
	createPods(t,
		big("in-ns"),
		withLabel(big("own-label"), v1alpha1.QueueLabel, "from-pod"),
		withLabel(withLabel(big("in-gang"), v1alpha1.QueueLabel, "from-pod"), "scheduling.x-k8s.io/pod-group", "g"),
	)
	waitPodEvent(t, ns, "in-ns", "queue from-ns has insufficient cpu quota")
	waitPodEvent(t, ns, "own-label", "queue from-pod has insufficient cpu quota")
	waitEvent(t, ns, "GangHeldByQueue event naming queue from-pg", func(e eventsv1.Event) bool {
		return e.Regarding.Name == "g" && e.Reason == "GangHeldByQueue" && strings.Contains(e.Note, "queue from-pg has insufficient cpu quota")
	})
	waitPodEvent(t, ns, "own-label", `label cardinal.dev/preemptibility="sometimes" on the pod is not one of preemptible, non-preemptible, semi-preemptible`)
	neverBound(t, ns, "in-ns", "own-label", "in-gang")
}
