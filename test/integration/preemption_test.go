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
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestElasticPodsGiveWay: job A (min 5, 10 pods) holds all 10 GPUs, 5 of
// them with elastic pods; job B (min 5) arrives. B gets 5, A keeps exactly
// 5 and is never below 5 (SPEC §2.4, §5.3, §5.4): in one queue, and across
// two queues whose deserved share is 5 each, A's queue not reclaimable
// (which protects only its non-elastic work, SPEC §5.6).
func TestElasticPodsGiveWay(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, i int) (nsA, nsB string)
		reason   string
		mentions string
	}{
		{"one queue", func(t *testing.T, i int) (string, string) {
			ns := createGPUNamespace(t, fmt.Sprintf("elastic-way-%d", i))
			return ns, ns
		}, "Preempted", "elastic pods give way to any gang's min"},
		{"two queues, A's not reclaimable", func(t *testing.T, i int) (string, string) {
			return gpuQueue(t, fmt.Sprintf("elastic-way-%d-a", i), 0, 10, false), gpuQueue(t, fmt.Sprintf("elastic-way-%d-b", i), 0, 10, true)
		}, "Reclaimed", "is below its deserved NVIDIA-H200 share, 0 of 5"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nsA, nsB := tc.setup(t, i)
			createNodes(t, gpuNodes(fmt.Sprintf("ew%d", i), 2, 5)...)
			startScheduler(t)

			createPodGroup(t, nsA, "a", 5)
			createPods(t, gangPods(nsA, "a", 10, 1)...)
			waitBound(t, nsA, gangsBound(map[string]int{"a": 10}))

			createPodGroup(t, nsB, "b", 5)
			createPods(t, gangPods(nsB, "b", 5, 1)...)
			err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
				if a := boundPerGang(t, nsA)["a"]; a < 5 {
					return false, fmt.Errorf("gang a fell to %d pods bound, below its min of 5", a)
				}
				return boundPerGang(t, nsB)["b"] == 5, nil
			})
			if err != nil {
				t.Fatalf("b did not get its min with a kept at 5 or more: %v (a %v, b %v)", err, boundPerGang(t, nsA), boundPerGang(t, nsB))
			}
			waitVictimEvent(t, nsA, "a-", tc.reason, tc.mentions)
			holdCountsWithin(t, nsA, holdWindow, map[string][2]int{"a": {5, 5}})
			holdCountsWithin(t, nsB, holdWindow, map[string][2]int{"b": {5, 5}})
		})
	}
}

// TestWholeLowPriorityGangGoes: a lower-priority preemptible gang of 4 on
// 4 GPUs gives way whole to a higher-priority gang of 2: never 1 to 3 of
// it is left running (SPEC §5.3).
func TestWholeLowPriorityGangGoes(t *testing.T) {
	ensurePriorityClasses(t)
	for i, config := range []struct{ name, path string }{
		{"config/scheduler-config.yaml", env.configPath},
		// The PostFilters in the other order: the gang still preempts
		// before it gives up.
		{"CardinalPreemption listed first", configWith(t,
			"      - name: CardinalPreemption\n", "",
			"      - name: CardinalGang\n", "      - name: CardinalPreemption\n      - name: CardinalGang\n")},
	} {
		t.Run(config.name, func(t *testing.T) { wholeLowPriorityGangGoes(t, i, config.path) })
	}
}

func wholeLowPriorityGangGoes(t *testing.T, i int, configPath string) {
	ns := gpuQueue(t, fmt.Sprintf("whole-gang-%d", i), 4, 8, true)
	createNodes(t, gpuNodes(fmt.Sprintf("whole%d", i), 1, 4)...)
	startSchedulerWith(t, configPath)

	createPodGroup(t, ns, "low", 4)
	createPods(t, prioritized(lowPriority, gangPods(ns, "low", 4, 1)...)...)
	waitBound(t, ns, gangsBound(map[string]int{"low": 4}))

	podGroupWith(t, ns, "high", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible})
	createPods(t, prioritized(highPriority, gangPods(ns, "high", 2, 1)...)...)
	// The victims are deleted one API call each, so a list may catch low
	// between 4 and 0 for a moment; what must not happen is low staying
	// there.
	partly := partialWatch{}
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		got := boundPerGang(t, ns)
		if err := partly.check(got, map[string]int{"low": 4}); err != nil {
			return false, err
		}
		return got["high"] == 2 && got["low"] == 0, nil
	})
	if err != nil {
		t.Fatalf("high did not replace low whole: %v (%v)", err, boundPerGang(t, ns))
	}
	// One decision took the whole gang, not a few pods at a time.
	waitEvent(t, ns, "Preempted event on PodGroup low for all 4 of its pods", func(e eventsv1.Event) bool {
		return e.Regarding.Kind == "PodGroup" && e.Regarding.Name == "low" && e.Reason == "Preempted" &&
			strings.HasPrefix(e.Note, "4 of its pods evicted")
	})
	waitVictimEvent(t, ns, "low-", "Preempted", "this gang has priority 10")
	holdCountsWithin(t, ns, holdWindow, map[string][2]int{"low": {0, 0}, "high": {2, 2}})
}

// TestElasticPodsBeforeWholeGangs: two low-priority gangs (min 2 of 4),
// one per node; a higher-priority gang of 4 one-card pods could take one
// node whole, breaking a gang, or the elastic pods of both: it takes the
// elastic pods, and neither gang goes below its min (SPEC §5.3).
func TestElasticPodsBeforeWholeGangs(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "elastic-first", 8, 8, true)
	var nodes []*corev1.Node
	for i := range 2 {
		nodes = append(nodes, builder.MakeNode(fmt.Sprintf("eflow-%d", i)).GPU("NVIDIA-H200", 4).Label("cardinal.dev/test-slot", fmt.Sprint(i)).Obj())
	}
	createNodes(t, nodes...)
	startScheduler(t)

	for i, g := range []string{"x", "y"} {
		createPodGroup(t, ns, g, 2)
		pods := prioritized(lowPriority, gangPods(ns, g, 4, 1)...)
		for _, p := range pods {
			p.Spec.NodeSelector = map[string]string{"cardinal.dev/test-slot": fmt.Sprint(i)}
		}
		createPods(t, pods...)
	}
	waitBound(t, ns, gangsBound(map[string]int{"x": 4, "y": 4}))

	podGroupWith(t, ns, "high", 4, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible})
	createPods(t, prioritized(highPriority, gangPods(ns, "high", 4, 1)...)...)
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		got := boundPerGang(t, ns)
		if got["x"] < 2 || got["y"] < 2 {
			return false, fmt.Errorf("a low gang lost more than its elastic pods: %v", got)
		}
		return got["high"] == 4, nil
	})
	if err != nil {
		t.Fatalf("high did not get its min from elastic pods alone: %v (%v)", err, boundPerGang(t, ns))
	}
	holdCountsWithin(t, ns, holdWindow, map[string][2]int{"x": {2, 2}, "y": {2, 2}, "high": {4, 4}})
}

// TestNoSecondRoundWhileVictimsTerminate: a victim that takes its time to
// terminate keeps its preemptor waiting, not evicting more (SPEC §5.8):
// past the time room is kept once victims are gone, and across a
// scheduler restart, which forgets what it evicted. When the victim is
// gone the preemptor binds on its node.
func TestNoSecondRoundWhileVictimsTerminate(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "terminating", 2, 2, true)
	createNodes(t, gpuNodes("term", 2, 1)...)
	s := startScheduler(t)
	low := prioritized(lowPriority, builder.MakePod(ns, "low-0").GPU(1).Obj(), builder.MakePod(ns, "low-1").GPU(1).Obj())
	for _, p := range low {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](300) // no kubelet ends it: the test does
	}
	createPods(t, low...)
	nodes := waitBound(t, ns, podsNamed("low-0", "low-1"))
	createPods(t, prioritized(highPriority, builder.MakePod(ns, "high").GPU(1).Obj())...)

	var victim, other string
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		for i, name := range []string{"low-0", "low-1"} {
			p, err := env.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.DeletionTimestamp != nil {
				victim, other = name, fmt.Sprintf("low-%d", 1-i)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no victim evicted for high: %v", err)
	}
	untouched := func(window time.Duration) {
		t.Helper()
		deadline := time.Now().Add(window)
		for time.Now().Before(deadline) {
			p, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), other, metav1.GetOptions{})
			if err != nil || p.DeletionTimestamp != nil {
				t.Fatalf("a second victim, %s, was evicted while %s terminates (err %v)", other, victim, err)
			}
			time.Sleep(poll)
		}
	}
	untouched(35 * time.Second) // longer than room is kept once victims are gone
	s.Stop()
	startScheduler(t)
	untouched(10 * time.Second)

	if err := env.kube.CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, ns, podsNamed("high"))["high"]; got != nodes[victim] {
		t.Errorf("high bound on %s, want %s, where %s was", got, nodes[victim], victim)
	}
	untouched(holdWindow)
}

// TestNothingEvictedWhenMinCannotFit: with A (min 5 of 8) on 8 GPUs, B
// (min 5, same priority) may take only A's 3 elastic pods, which cannot
// fit its min: nothing is evicted, all of A stays (SPEC §5.5).
func TestNothingEvictedWhenMinCannotFit(t *testing.T) {
	ns := createGPUNamespace(t, "no-fit")
	createNodes(t, gpuNodes("nofit", 2, 4)...)
	startScheduler(t)

	createPodGroup(t, ns, "a", 5)
	createPods(t, gangPods(ns, "a", 8, 1)...)
	waitBound(t, ns, gangsBound(map[string]int{"a": 8}))
	createPodGroup(t, ns, "b", 5)
	createPods(t, gangPods(ns, "b", 5, 1)...)
	waitEvent(t, ns, "a FailedScheduling event on b saying its min does not fit with every victim gone", func(e eventsv1.Event) bool {
		return e.Reason == "FailedScheduling" && strings.HasPrefix(e.Regarding.Name, "b-") && strings.Contains(e.Note, "they do not fit (room for 3)")
	})
	holdBoundCounts(t, ns, map[string]int{"a": 8}, 30*time.Second)
}

// TestNonPreemptibleNeverEvicted: work of priority 10 that is
// non-preemptible by its pod's label, its PodGroup's label or its
// Deployment's label is never evicted by priority-1000 work; preemptible
// pods of priority 500 are, and only as many as needed: one victim, not two
// (SPEC §5.1, §5.2, §5.3).
func TestNonPreemptibleNeverEvicted(t *testing.T) {
	ensurePriorityClasses(t)
	nonPreemptible := map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible}
	tests := []struct {
		name  string
		start func(t *testing.T, ns string)
	}{
		{"pod label", func(t *testing.T, ns string) {
			createPods(t, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.NonPreemptible,
				prioritized(lowPriority, cardPods(ns, "np", "", 2)...)...)...)
		}},
		{"PodGroup label", func(t *testing.T, ns string) {
			podGroupWith(t, ns, "np", 2, nonPreemptible)
			createPods(t, prioritized(lowPriority, gangPods(ns, "np", 2, 1)...)...)
		}},
		{"Deployment label (top-level owner)", func(t *testing.T, ns string) {
			d := cardDeployment(ns, "np", h200, 2)
			d.Labels = nonPreemptible
			d.Spec.Template.Spec.PriorityClassName = lowPriority
			if _, err := env.kube.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := gpuQueue(t, fmt.Sprintf("never-%d", i), 2, 4, true)
			createNodes(t, gpuNodes(fmt.Sprintf("never%d", i), 1, 2)...)
			startScheduler(t)
			tc.start(t, ns)
			waitBound(t, ns, boundCount(2))
			before := boundPods(t, ns)

			high := labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, prioritized(highPriority, cardPods(ns, "high", "", 1)...)...)
			createPods(t, high...)
			waitPodEvent(t, ns, "high-0", "no preemption")
			holdFor(t, holdWindow, func() error {
				if got := boundPods(t, ns); fmt.Sprint(got) != fmt.Sprint(before) {
					return fmt.Errorf("bound pods changed from %v to %v: a non-preemptible pod was evicted", before, got)
				}
				return nil
			})
		})
	}

	t.Run("preemptible pods of priority 500: one victim", func(t *testing.T) {
		ns := gpuQueue(t, "never-mid", 0, 4, true)
		createNodes(t, gpuNodes("nevermid", 1, 2)...)
		startScheduler(t)
		createPods(t, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, prioritized(midPriority, cardPods(ns, "mid", "", 2)...)...)...)
		waitBound(t, ns, boundCount(2))
		createPods(t, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, prioritized(highPriority, cardPods(ns, "high", "", 1)...)...)...)
		waitBound(t, ns, podsNamed("high-0"))
		waitVictimEvent(t, ns, "mid-", "Preempted", "this pod has priority 500")
		holdFor(t, holdWindow, func() error {
			if got := boundPods(t, ns); len(got) != 2 {
				return fmt.Errorf("bound pods %v, want high-0 and one mid pod: one victim, not two", got)
			}
			return nil
		})
	})
}

// TestSemiPreemptibleGivesOnlyElastic: a semi-preemptible gang's elastic
// pods are taken by a higher-priority gang, its min members never (SPEC
// §5.2).
func TestSemiPreemptibleGivesOnlyElastic(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "semi-preempt", 2, 8, true)
	createNodes(t, gpuNodes("semip", 1, 4)...)
	startScheduler(t)

	podGroupWith(t, ns, "semi", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible})
	createPods(t, gangPods(ns, "semi", 4, 1)...)
	waitBound(t, ns, gangsBound(map[string]int{"semi": 4}))

	preemptible := map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible}
	podGroupWith(t, ns, "high", 2, preemptible)
	createPods(t, prioritized(highPriority, gangPods(ns, "high", 2, 1)...)...)
	waitBound(t, ns, gangsBound(map[string]int{"semi": 2, "high": 2}))

	podGroupWith(t, ns, "more", 2, preemptible)
	createPods(t, prioritized(highPriority, gangPods(ns, "more", 2, 1)...)...)
	waitPodEvent(t, ns, "more-0", "no preemption")
	holdBoundCounts(t, ns, map[string]int{"semi": 2, "high": 2}, holdWindow)
}

// TestCardAwareReclaim: queue B, below its deserved NVIDIA-H200 share,
// reclaims the H200 cards queue A borrowed, never A's RTX 4090 pods, and
// never takes A below its own deserved H200 share (SPEC §3.2, §5.4, §5.6).
func TestCardAwareReclaim(t *testing.T) {
	createQueue(t, builder.MakeQueue("cards-a").Card(h200, 0, 4).Card(rtx, 0, 4).Obj())
	createQueue(t, builder.MakeQueue("cards-b").Card(h200, 0, 4).Obj())
	nsA := createNamespaceInQueue(t, "cards-a", "cards-a")
	nsB := createNamespaceInQueue(t, "cards-b", "cards-b")
	createNodes(t, builder.MakeNode("cards-h200").GPU(h200, 4).Obj(), builder.MakeNode("cards-rtx").GPU(rtx, 4).Obj())
	startScheduler(t)

	createPods(t, cardPods(nsA, "h200", h200, 4)...)
	createPods(t, cardPods(nsA, "rtx", rtx, 4)...)
	waitBound(t, nsA, boundCount(8))

	createPodGroup(t, nsB, "b", 2)
	var b []*corev1.Pod
	for i := range 2 {
		b = append(b, builder.MakePod(nsB, fmt.Sprintf("b-%d", i)).Label("scheduling.x-k8s.io/pod-group", "b").Req("cpu", "100m").GPU(1).CardName(h200).Obj())
	}
	createPods(t, b...)
	waitBound(t, nsB, podsNamed("b-0", "b-1"))
	waitVictimEvent(t, nsA, "h200-", "Reclaimed", "queue cards-b is below its deserved NVIDIA-H200 share, 0 of 2")
	holdFor(t, holdWindow, func() error {
		var h, r int
		for _, name := range boundPods(t, nsA) {
			if strings.HasPrefix(name, "rtx-") {
				r++
			} else {
				h++
			}
		}
		if h != 2 || r != 4 {
			return fmt.Errorf("queue cards-a has %d H200 and %d RTX pods bound, want 2 (its deserved share) and 4", h, r)
		}
		return nil
	})
}

// TestReclaimSettles: two queues' elastic jobs, whose evicted pods their
// Deployments create again, on a full cluster: once B has its min, no pod
// is evicted, and the split holds (SPEC §5.6): neither queue can take the
// same capacity back.
func TestReclaimSettles(t *testing.T) {
	nsA := gpuQueue(t, "settle-a", 0, 10, true)
	nsB := gpuQueue(t, "settle-b", 0, 10, true)
	createNodes(t, gpuNodes("settle", 2, 5)...)
	startScheduler(t)

	deploy := func(ns, group string) {
		createPodGroup(t, ns, group, 2)
		d := cardDeployment(ns, group, h200, 10)
		d.Spec.Template.Labels["scheduling.x-k8s.io/pod-group"] = group
		if _, err := env.kube.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deploy(nsA, "a")
	waitBound(t, nsA, gangsBound(map[string]int{"a": 10}))
	deploy(nsB, "b")
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		a, b := boundPerGang(t, nsA)["a"], boundPerGang(t, nsB)["b"]
		return b >= 2 && a+b == 10, nil
	})
	if err != nil {
		t.Fatalf("b never got its min on a full cluster: a %v, b %v", boundPerGang(t, nsA), boundPerGang(t, nsB))
	}
	settledA, settledB := boundPerGang(t, nsA)["a"], boundPerGang(t, nsB)["b"]
	evictions := countEvents(t, nsA, "Reclaimed") + countEvents(t, nsB, "Reclaimed")
	if evictions != 2 {
		t.Errorf("%d pods were reclaimed for b's min of 2, want 2: one round, as few as needed", evictions)
	}
	holdFor(t, 60*time.Second, func() error {
		a, b := boundPerGang(t, nsA)["a"], boundPerGang(t, nsB)["b"]
		if a != settledA || b != settledB {
			return fmt.Errorf("the split moved from %d/%d to %d/%d", settledA, settledB, a, b)
		}
		if n := countEvents(t, nsA, "Reclaimed") + countEvents(t, nsB, "Reclaimed"); n != evictions {
			return fmt.Errorf("%d more pods were reclaimed after the split", n-evictions)
		}
		return nil
	})
	t.Logf("settled at %d/%d after %d reclaims", settledA, settledB, evictions)
}

// TestWorkerFollowingItsLeaderPreempts: a gang's worker must run on its
// leader's node (required pod affinity, as a LeaderWorkerSet's workers
// often are), so until the leader is placed every node refuses the worker
// for good. The worker, created first, is the pod whose cycle plans: the
// plan still places the leader and the worker beside it, evicting two of
// the four lower-priority pods that fill the only node and the queue's
// capability exactly (SPEC §5.2, §5.3).
func TestWorkerFollowingItsLeaderPreempts(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "follow", 0, 4, true)
	createNodes(t, gpuNodes("follow", 1, 4)...)
	startScheduler(t)
	createPods(t, labelled(v1alpha1.PreemptibilityLabel, v1alpha1.Preemptible, prioritized(lowPriority, cardPods(ns, "low", "", 4)...)...)...)
	waitBound(t, ns, boundCount(4))

	podGroupWith(t, ns, "lw", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible})
	leader, worker := gangPod(ns, "lw", 0, 1), gangPod(ns, "lw", 1, 1)
	leader.Labels["role"], worker.Labels["role"] = "leader", "worker"
	worker.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "leader"}}, TopologyKey: corev1.LabelHostname}}}}
	createPods(t, prioritized(highPriority, worker)...)
	// The worker is the older pod, tried first: the leader is made once
	// the second the worker's creation timestamp names has passed.
	made, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), worker.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		return time.Now().Truncate(time.Second).After(made.CreationTimestamp.Time), nil
	}); err != nil {
		t.Fatal(err)
	}
	createPods(t, prioritized(highPriority, leader)...)
	// The victims take their grace period (30 s) to go.
	waitBound(t, ns, podsNamed(leader.Name, worker.Name), within(waitTimeout+30*time.Second))
	holdFor(t, holdWindow, func() error {
		if got := boundPods(t, ns); len(got) != 4 {
			return fmt.Errorf("bound pods %v, want the leader, the worker and two low pods: two victims, not more", got)
		}
		return nil
	})
}

// TestPreemptionAcrossNodes: a gang whose missing min spans several nodes
// gets it by preemption in one round, with victims on three nodes, and the
// scheduler's metrics count it (SPEC §5, §6).
func TestPreemptionAcrossNodes(t *testing.T) {
	ensurePriorityClasses(t)
	ns := gpuQueue(t, "across", 0, 12, true)
	createNodes(t, gpuNodes("across", 3, 2)...)
	s := startScheduler(t, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")

	createPods(t, prioritized(lowPriority, cardPods(ns, "low", "", 6)...)...)
	waitBound(t, ns, boundCount(6))
	podGroupWith(t, ns, "wide", 6, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible})
	createPods(t, prioritized(highPriority, gangPods(ns, "wide", 6, 1)...)...)
	waitBound(t, ns, gangsBound(map[string]int{"wide": 6}))
	waitGangNote(t, ns, "wide", "Preempting", "evicted 6 pods on 3 nodes for its min of 6")
	if n := countEvents(t, ns, "Preempting"); n != 1 {
		t.Errorf("%d preemption rounds, want 1", n)
	}
	metrics := scrapeMetrics(t, s)
	for _, want := range []string{`cardinal_preemption_evictions_total{reason="in-queue"} 6`, `cardinal_preemption_attempts_total{result="evicted"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// TestReclaimTakesOneOfTheGangsSharingNodes: queue B's three gangs share
// three nodes, each gang with pods on every node; queue A, below its
// share, needs eight single cards, which one of B's gangs frees. Exactly
// that one gang is reclaimed: not every gang with a pod on the one node a
// plan would first fill, which would take B below its own share and be
// refused, leaving A waiting (SPEC §5.3, §5.6).
func TestReclaimTakesOneOfTheGangsSharingNodes(t *testing.T) {
	createQueue(t, builder.MakeQueue("share-a").Card(h200, 8, 24).Obj())
	createQueue(t, builder.MakeQueue("share-b").Card(h200, 8, 24).Obj())
	nsA := createNamespaceInQueue(t, "share-a", "share-a")
	nsB := createNamespaceInQueue(t, "share-b", "share-b")
	for i := range 3 {
		createNodes(t, builder.MakeNode(fmt.Sprintf("share-%d", i)).GPU(h200, 8).Label("share", fmt.Sprint(i)).Obj())
	}
	startScheduler(t)

	for g := range 3 {
		name := fmt.Sprintf("b%d", g)
		createPodGroup(t, nsB, name, 4)
		var pods []*corev1.Pod
		for i := range 4 {
			pods = append(pods, builder.MakePod(nsB, fmt.Sprintf("%s-%d", name, i)).Label("scheduling.x-k8s.io/pod-group", name).
				Req("cpu", "100m").GPU(2).CardName(h200).NodeSelector("share", fmt.Sprint((g+i)%3)).Obj())
		}
		createPods(t, pods...)
	}
	waitBound(t, nsB, gangsBound(map[string]int{"b0": 4, "b1": 4, "b2": 4}))

	createPodGroup(t, nsA, "a", 8)
	var a []*corev1.Pod
	for i := range 8 {
		a = append(a, builder.MakePod(nsA, fmt.Sprintf("a-%d", i)).Label("scheduling.x-k8s.io/pod-group", "a").Req("cpu", "100m").GPU(1).CardName(h200).Obj())
	}
	createPods(t, a...)
	waitBound(t, nsA, gangsBound(map[string]int{"a": 8}))
	holdFor(t, holdWindow, func() error {
		whole, err := wholeGangs(boundPerGang(t, nsB), 4, "b0", "b1", "b2")
		if err != nil {
			return fmt.Errorf("queue share-b: %w", err)
		}
		if whole != 2 {
			return fmt.Errorf("queue share-b runs %d whole gangs, want 2: one reclaimed for a's 8 cards", whole)
		}
		if n := countEvents(t, nsB, "Reclaimed"); n != 4 {
			return fmt.Errorf("%d pods of queue share-b reclaimed, want 4", n)
		}
		return nil
	})
}

// TestReclaimTakesWhereTheQueueIsAboveItsShare: a queue above its
// deserved share of one card model and at it on another gives up the
// first. The reclaiming gang may use either model; room on the second is
// found first (only elastic pods and a small gang stand there) but taking
// it would leave the queue below its share there, so the reclaim takes one
// of the queue's gangs on the first model instead of being refused.
func TestReclaimTakesWhereTheQueueIsAboveItsShare(t *testing.T) {
	createQueue(t, builder.MakeQueue("above-a").Card(h200, 4, 8).Card(rtx, 4, 8).Obj())
	createQueue(t, builder.MakeQueue("above-b").Card(h200, 4, 8).Card(rtx, 0, 8).Obj())
	nsA := createNamespaceInQueue(t, "above-a", "above-a")
	nsB := createNamespaceInQueue(t, "above-b", "above-b")
	createNodes(t, builder.MakeNode("above-h200").GPU(h200, 8).Obj(), builder.MakeNode("above-rtx").GPU(rtx, 4).Obj())
	startScheduler(t)

	gang := func(ns, name string, size int, min int32, card string) {
		createPodGroup(t, ns, name, min)
		var pods []*corev1.Pod
		for i := range size {
			pods = append(pods, builder.MakePod(ns, fmt.Sprintf("%s-%d", name, i)).Label("scheduling.x-k8s.io/pod-group", name).
				Req("cpu", "100m").GPU(1).CardName(card).Obj())
		}
		createPods(t, pods...)
	}
	gang(nsA, "rtx", 4, 2, rtx)
	gang(nsA, "h0", 4, 4, h200)
	gang(nsA, "h1", 4, 4, h200)
	waitBound(t, nsA, gangsBound(map[string]int{"rtx": 4, "h0": 4, "h1": 4}))

	gang(nsB, "b", 4, 4, h200+"|"+rtx)
	waitBound(t, nsB, gangsBound(map[string]int{"b": 4}))
	holdFor(t, holdWindow, func() error {
		per := boundPerGang(t, nsA)
		if per["rtx"] != 4 {
			return fmt.Errorf("queue above-a runs %d of its 4 RTX pods, want 4: it is at its RTX share", per["rtx"])
		}
		if per["h0"]+per["h1"] != 4 || per["h0"]%4 != 0 {
			return fmt.Errorf("queue above-a runs H200 gangs %v, want one whole, one reclaimed", per)
		}
		if n := countEvents(t, nsA, "Reclaimed"); n != 4 {
			return fmt.Errorf("%d pods of queue above-a reclaimed, want 4", n)
		}
		if per := boundPerGang(t, nsB); per["b"] != 4 {
			return fmt.Errorf("queue above-b runs %d of its gang's 4 pods", per["b"])
		}
		return nil
	})
}

// TestGangsReclaimingTogetherStopAtTheirShare: three gangs of a queue
// reclaim from a queue that borrowed the whole cluster, all while the
// first victims are still terminating. Each later gang counts the room
// already being made for the earlier ones, and the pods already leaving:
// exactly the queue's deserved share is evicted (8 of 16 cards, two
// gangs), not a gang's worth more (SPEC §5.6).
func TestGangsReclaimingTogetherStopAtTheirShare(t *testing.T) {
	nsA := gpuQueue(t, "together-a", 0, 16, true)
	nsB := gpuQueue(t, "together-b", 0, 16, true)
	createNodes(t, gpuNodes("together", 4, 4)...)
	startScheduler(t)

	slowToGo(t, nsA, 16)

	for _, g := range []string{"b0", "b1", "b2"} {
		createPodGroup(t, nsB, g, 4)
		createPods(t, gangPods(nsB, g, 4, 1)...)
	}
	terminating := func() []string { return terminatingIn(t, nsA) }
	waitTerminatingIn(t, nsA, 8)
	// The victims terminate for as long as the test lets them. The third
	// gang tries to reclaim meanwhile, and finds nothing it may take.
	waitRefusedReclaim(t, nsB)
	holdFor(t, 10*time.Second, func() error {
		if n := len(terminating()); n != 8 {
			return fmt.Errorf("%d of queue together-a's pods evicted while the first victims terminate, want 8: b's share", n)
		}
		return nil
	})
	endTerminating(t, nsA)
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		per := boundPerGang(t, nsB)
		return per["b0"]+per["b1"]+per["b2"] == 8, nil
	})
	if err != nil {
		t.Fatalf("queue together-b runs %v, want two whole gangs", boundPerGang(t, nsB))
	}
	holdFor(t, holdWindow, func() error {
		whole, err := wholeGangs(boundPerGang(t, nsB), 4, "b0", "b1", "b2")
		if err != nil {
			return fmt.Errorf("queue together-b: %w", err)
		}
		if whole != 2 {
			return fmt.Errorf("queue together-b runs %d whole gangs, want 2: its deserved 8 cards", whole)
		}
		if n := len(terminating()); n != 0 {
			return fmt.Errorf("%d more of queue together-a's pods evicted once b had its share", n)
		}
		if n := countEvents(t, nsA, "Reclaimed"); n != 8 {
			return fmt.Errorf("%d pods of queue together-a reclaimed, want 8", n)
		}
		return nil
	})
}

// TestGangsReclaimingAcrossARestartStopAtTheirShare: a restart while the
// victims of one gang's reclaim terminate loses what the scheduler
// remembered of it; the gangs of the same queue that come after still
// count those victims as leaving, and evict only what the queue's share
// needs (SPEC §5.6, §5.8).
func TestGangsReclaimingAcrossARestartStopAtTheirShare(t *testing.T) {
	nsA := gpuQueue(t, "restart-a", 0, 16, true)
	nsB := gpuQueue(t, "restart-b", 0, 16, true)
	createNodes(t, gpuNodes("restart", 4, 4)...)
	s := startScheduler(t)

	slowToGo(t, nsA, 16)
	terminating := func() []string { return terminatingIn(t, nsA) }
	waitTerminating := func(n int) { t.Helper(); waitTerminatingIn(t, nsA, n) }

	createPodGroup(t, nsB, "b0", 4)
	createPods(t, gangPods(nsB, "b0", 4, 1)...)
	waitTerminating(4)
	s.Stop()
	startScheduler(t)
	for _, g := range []string{"b1", "b2"} {
		createPodGroup(t, nsB, g, 4)
		createPods(t, gangPods(nsB, g, 4, 1)...)
	}
	waitTerminating(8)
	waitRefusedReclaim(t, nsB)
	holdFor(t, 10*time.Second, func() error {
		if n := len(terminating()); n != 8 {
			return fmt.Errorf("%d of queue restart-a's pods evicted across the restart, want 8: b's share", n)
		}
		return nil
	})
	endTerminating(t, nsA)
	// The gang the first reclaim was for is not woken by its victims going
	// when the scheduler no longer remembers them; it may wait for its
	// next retry. What must hold: b never runs more than its share, nor a
	// part of a gang, and nothing more is evicted.
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		whole, err := wholeGangs(boundPerGang(t, nsB), 4, "b0", "b1", "b2")
		return err == nil && whole >= 1, nil
	})
	if err != nil {
		t.Fatalf("queue restart-b runs %v, want a whole gang", boundPerGang(t, nsB))
	}
	holdFor(t, holdWindow, func() error {
		whole, err := wholeGangs(boundPerGang(t, nsB), 4, "b0", "b1", "b2")
		if err != nil {
			return fmt.Errorf("queue restart-b: %w", err)
		}
		if whole > 2 {
			return fmt.Errorf("queue restart-b runs %d whole gangs, want at most 2: its deserved 8 cards", whole)
		}
		if n := len(terminating()); n != 0 {
			return fmt.Errorf("%d more of queue restart-a's pods evicted once b had its share", n)
		}
		return nil
	})
}
