package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/config"
	"cardinal.dev/cardinal/pkg/inspect"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/test/builder"
)

// why answers as kubectl cardinal why does, from a fresh read of the cluster.
func why(t *testing.T, target, ns, name string) inspect.Answer {
	t.Helper()
	// An answer takes a second or two; a bound well under the test's
	// waits shows a hang for what it is.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := inspect.Load(ctx, env.cp.Config(), config.SchedulerConfiguration)
	if err != nil {
		t.Fatal(err)
	}
	var a inspect.Answer
	if target == "podgroup" {
		a, err = c.WhyPodGroup(ctx, ns, name)
	} else {
		a, err = c.WhyPod(ctx, ns, name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitScheduledMessage waits until the scheduler has written a PodScheduled
// condition on a pod whose message contains want, and returns it.
func waitScheduledMessage(t *testing.T, ns, name, want string) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := env.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				msg = c.Message
			}
		}
		return strings.Contains(msg, want), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: no PodScheduled message with %q (last %q)", ns, name, want, msg)
	}
	return msg
}

// waitWaitingReason waits until a PodGroup's waiting-reason annotation
// contains want, and returns it.
func waitWaitingReason(t *testing.T, ns, name, want string) string {
	t.Helper()
	var got string
	waitPodGroup(t, ns, name, "a waiting reason with "+want, func(pg *schedv1alpha1.PodGroup) bool {
		got = pg.Annotations[podgroupstatus.WaitingReasonAnnotation]
		return strings.Contains(got, want)
	})
	return got
}

// TestWhy: for each kind of refusal, kubectl cardinal why says, in the
// scheduler's own words and numbers, why a pod or gang waits and what
// would let it run; for a gang, exactly what its PodGroup's waiting-reason
// annotation says, holds included.
func TestWhy(t *testing.T) {
	createNodes(t, gpuNodes("why", 2, 4)...)
	startScheduler(t)
	const gangLabel = "scheduling.x-k8s.io/pod-group"

	tests := []struct {
		name string
		// setup creates the workload in ns (whose queue is ns) and waits
		// until the scheduler has judged it.
		setup  func(t *testing.T, ns string)
		target string // pod or podgroup
		object string
		// why is the exact sentence; {ns} stands for the namespace.
		why, fix string
		// annotated: the PodGroup's waiting-reason must equal why.
		annotated bool
	}{
		{
			name: "gang below its min",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 8).Obj())
				createPodGroup(t, ns, "g", 3)
				createPods(t, gangPods(ns, "g", 2, 1)...)
				waitWaitingReason(t, ns, "g", "waiting for 1 more")
			},
			target: "pod", object: "g-0",
			why: "gang {ns}/g has 2 of its minMember 3 pods; waiting for 1 more",
			fix: "create 1 more pods of the gang, or lower its minMember",
		},
		{
			name: "gang below its min, asked of its PodGroup",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 8).Obj())
				createPodGroup(t, ns, "g", 3)
				createPods(t, gangPods(ns, "g", 2, 1)...)
				waitWaitingReason(t, ns, "g", "waiting for 1 more")
			},
			target: "podgroup", object: "g",
			why: "2 of minMember 3 pods exist; waiting for 1 more",
			fix: "create 1 more pods of the gang, or lower its minMember", annotated: true,
		},
		{
			name: "no PodGroup",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 8).Obj())
				createPods(t, gangPod(ns, "g", 0, 1)) // why reads the cluster afresh: nothing to wait for
			},
			target: "pod", object: "g-0",
			why: "PodGroup {ns}/g not found: create it, or remove the label scheduling.x-k8s.io/pod-group from the pod",
			fix: "create the PodGroup {ns}/g, or remove the label scheduling.x-k8s.io/pod-group from the pod",
		},
		{
			name: "gang held by its queue's capability",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Capability("cpu", "1").Obj())
				createPodGroup(t, ns, "g", 2)
				createPods(t, builder.MakePod(ns, "g-0").Label(gangLabel, "g").Req("cpu", "1").Obj(), builder.MakePod(ns, "g-1").Label(gangLabel, "g").Req("cpu", "1").Obj())
				waitWaitingReason(t, ns, "g", "is held")
			},
			target: "podgroup", object: "g",
			why: "0 of minMember 2 pods scheduled; gang {ns}/g is held: its min needs 2 more pods; queue {ns} has insufficient cpu quota: requested 2, would use 2, capability 1 (its min alone asks for more than the capability)",
			fix: "it alone asks for 2 cpu, more than queue {ns}'s capability of 1: raise the capability to at least 2, or ask for less (a lower minMember, smaller pods)", annotated: true,
		},
		{
			name: "gang held by its queue's card quota",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 1).Obj())
				createPodGroup(t, ns, "g", 2)
				createPods(t, gangPods(ns, "g", 2, 1)...)
				waitWaitingReason(t, ns, "g", "is held")
			},
			target: "podgroup", object: "g",
			why: "0 of minMember 2 pods scheduled; gang {ns}/g is held: its min needs 2 more pods; queue {ns} has insufficient NVIDIA-H200 quota: requested 2, would use 2, capability 1 (its min alone asks for more than the capability)",
			fix: "it alone asks for 2 NVIDIA-H200, more than queue {ns}'s capability of 1: raise the capability to at least 2, or ask for less (a lower minMember, smaller pods)", annotated: true,
		},
		{
			name: "pod over its queue's capability",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Capability("cpu", "1").Obj())
				createPods(t, builder.MakePod(ns, "p").Req("cpu", "2").Obj())
				waitScheduledMessage(t, ns, "p", "insufficient cpu")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: queue {ns} has insufficient cpu quota: requested 2, would use 2, capability 1. no preemption: no pod that {ns}/p may evict (queue {ns})",
			fix: "it alone asks for 2 cpu, more than queue {ns}'s capability of 1: raise the capability to at least 2, or ask for less (a lower minMember, smaller pods)",
		},
		{
			name: "non-preemptible pod beyond its queue's guarantee",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Guarantee("cpu", "1").Capability("cpu", "4").Obj())
				createPods(t, builder.MakePod(ns, "p").Label("cardinal.dev/preemptibility", "non-preemptible").Req("cpu", "2").Obj())
				waitScheduledMessage(t, ns, "p", "guarantee")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: queue {ns}: non-preemptible pods may use only its guarantee of cpu: requested 2, would use 2, guarantee 1. no preemption: no pod that {ns}/p may evict (queue {ns})",
			fix: "raise queue {ns}'s guarantee of cpu to 2, or make the workload preemptible (label cardinal.dev/preemptibility)",
		},
		{
			name: "queue that does not exist",
			setup: func(t *testing.T, ns string) {
				createPods(t, builder.MakePod(ns, "p").Label("cardinal.dev/queue", "nowhere").Req("cpu", "1").Obj())
				waitScheduledMessage(t, ns, "p", "does not exist")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: queue nowhere does not exist: create it, or set the label cardinal.dev/queue on the pod, its PodGroup or its namespace to an existing queue. no preemption: no pod that {ns}/p may evict (queue nowhere)",
			fix: "create the Queue nowhere, or set the label cardinal.dev/queue to a queue that exists",
		},
		{
			name: "card model the queue has no quota for",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-A100", 0, 4).Obj())
				createPods(t, builder.MakePod(ns, "p").GPU(1).CardName("NVIDIA-H200").Obj())
				waitScheduledMessage(t, ns, "p", "no quota")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: queue {ns} has no quota for card model NVIDIA-H200: add it to the queue's spec.cards, or ask for a model the queue lists. no preemption: no pod that {ns}/p may evict (queue {ns})",
			fix: "add NVIDIA-H200 to queue {ns}'s spec.cards, or ask for a model the queue lists (annotation cardinal.dev/card-name)",
		},
		{
			name: "card quota used up",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 2).Obj())
				createPods(t, builder.MakePod(ns, "first").GPU(1).CardName("NVIDIA-H200").Obj())
				waitBound(t, ns, podsNamed("first"))
				createPods(t, builder.MakePod(ns, "p").GPU(2).CardName("NVIDIA-H200").Obj())
				waitScheduledMessage(t, ns, "p", "insufficient")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: queue {ns} has insufficient NVIDIA-H200 quota: requested 2, would use 3, capability 2. no preemption: no pod that {ns}/p may evict (queue {ns})",
			fix: "queue {ns} needs 1 more NVIDIA-H200: raise its capability for NVIDIA-H200 to 3, or end work in queue {ns} that uses it (kubectl cardinal queues shows its use)",
		},
		{
			name: "no node of the model",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-B200", 0, 4).Obj())
				createPods(t, builder.MakePod(ns, "p").GPU(1).CardName("NVIDIA-B200").Obj())
				waitScheduledMessage(t, ns, "p", "not among")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: 1 node why-0 has NVIDIA-H200, which is not among the pod's card models NVIDIA-B200, 1 node why-1 has NVIDIA-H200, which is not among the pod's card models NVIDIA-B200. no preemption: no pod that {ns}/p may evict (queue {ns})",
			fix: "add nodes with card model NVIDIA-B200, or allow other models in the pod's cardinal.dev/card-name annotation",
		},
		{
			name: "gang whose pods resolve to different queues",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 8).Obj())
				createPodGroup(t, ns, "g", 2)
				createPods(t, withLabel(gangPod(ns, "g", 0, 1), "cardinal.dev/queue", ns), withLabel(gangPod(ns, "g", 1, 1), "cardinal.dev/queue", "elsewhere"))
				waitWaitingReason(t, ns, "g", "different queues")
			},
			target: "podgroup", object: "g",
			why:       "0 of minMember 2 pods scheduled; gang {ns}/g's pods resolve to different queues: elsewhere (1 pods), {ns} (1 pods); set the label cardinal.dev/queue on the PodGroup so the gang is charged to one queue",
			fix:       "label PodGroup {ns}/g with cardinal.dev/queue, or give all its pods the same queue",
			annotated: true,
		},
		{
			name: "card models used through different resources",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 8).Card("NVIDIA-H200/mig-1g.18gb-mixed", 0, 8).Obj())
				createPods(t, builder.MakePod(ns, "p").GPU(1).CardName("NVIDIA-H200|NVIDIA-H200/mig-1g.18gb-mixed").Obj())
				waitScheduledMessage(t, ns, "p", "0/2 nodes")
			},
			target: "pod", object: "p",
			why: "0/2 nodes are available: pod {ns}/p: card models NVIDIA-H200 and NVIDIA-H200/mig-1g.18gb-mixed need different resources (whole cards and nvidia.com/mig-1g.18gb), and a pod requests only one: list alternatives of the same kind, or run one workload per kind. no preemption: no pod that {ns}/p may evict (queue {ns})",
			fix: "in the cardinal.dev/card-name annotation, list only models used through one resource (all whole cards, or all the same MIG or MPS slice)",
		},
		{
			name: "another gang's min comes first",
			setup: func(t *testing.T, ns string) {
				createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 8).Obj())
				createPlacingGang(t, ns, "a", 3)
				createPodGroup(t, ns, "b", 2)
				createPods(t, gangPods(ns, "b", 2, 1)...)
				waitWaitingReason(t, ns, "b", "which is being placed")
			},
			target: "podgroup", object: "b",
			why: "0 of minMember 2 pods scheduled; pod b-0: 0/3 nodes are available: waiting for gang {ns}/a, which is being placed (2 of its min 3 placed). no preemption: it waits for another gang to be placed, not for room",
			fix: "nothing: it is tried as soon as gang {ns}/a is placed or gives up (gangs are placed one at a time, so none deadlocks)", annotated: true,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("why-%d", i)
			createNamespaceInQueue(t, ns, ns)
			tc.setup(t, ns)
			expand := func(s string) string { return strings.ReplaceAll(s, "{ns}", ns) }
			a := why(t, tc.target, ns, tc.object)
			if a.State != inspect.Waiting || a.Why != expand(tc.why) || a.Fix != expand(tc.fix) {
				t.Errorf("why %s/%s:\n state %s\n why  %q\n fix  %q\nwant why %q\n fix  %q", tc.target, tc.object, a.State, a.Why, a.Fix, expand(tc.why), expand(tc.fix))
			}
			if tc.annotated {
				pg, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(context.Background(), tc.object, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := pg.Annotations[podgroupstatus.WaitingReasonAnnotation]; got != a.Why {
					t.Errorf("PodGroup %s's waiting reason %q, why says %q", tc.object, got, a.Why)
				}
			}
		})
	}
}

// TestWhyRuntime: what only the running scheduler knows (a backoff, an
// elastic pod waiting for free room) and what it did (a pod bound, a pod
// evicted for another queue) is answered from what it wrote.
func TestWhyRuntime(t *testing.T) {
	createNodes(t, gpuNodes("whyrt", 2, 4)...)
	startScheduler(t)

	t.Run("backing off", func(t *testing.T) {
		ns := createGPUNamespace(t, "whyrt-backoff")
		createPodGroup(t, ns, "g", 2)
		createPods(t, gangPods(ns, "g", 2, 5)...)
		note := waitWaitingReason(t, ns, "g", "is backing off until")
		a := why(t, "podgroup", ns, "g")
		if a.Why != note {
			// A new backoff may have begun meanwhile.
			pg, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(context.Background(), "g", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if now := pg.Annotations[podgroupstatus.WaitingReasonAnnotation]; a.Why != now {
				t.Errorf("why podgroup/g %q, its waiting reason %q, then %q", a.Why, note, now)
			}
		}
		m := regexp.MustCompile(`^0 of minMember 2 pods scheduled; (gang whyrt-backoff/g is backing off until (\S+Z) after: pod g-0 cannot be placed now .*)$`).FindStringSubmatch(a.Why)
		if m == nil {
			t.Fatalf("why podgroup/g %q: no backoff with its end", a.Why)
		}
		if want := "nothing: it is tried again at " + m[2]; a.Fix != want {
			t.Errorf("fix %q, want %q", a.Fix, want)
		}
		if p := why(t, "pod", ns, "g-1"); !strings.HasPrefix(p.Why, "gang whyrt-backoff/g is backing off until ") {
			t.Errorf("why pod g-1: %q, want the gang's backoff", p.Why)
		}
	})

	t.Run("elastic pod, then bound pods", func(t *testing.T) {
		ns := createGPUNamespace(t, "whyrt-elastic")
		createPodGroup(t, ns, "g", 1)
		createPods(t, gangPods(ns, "g", 3, 4)...)
		waitBound(t, ns, gangsBound(map[string]int{"g": 2}))
		msg := waitScheduledMessage(t, ns, "g-2", "elastic pods never preempt")
		a := why(t, "pod", ns, "g-2")
		if a.State != inspect.Waiting || a.Why != msg {
			t.Errorf("why g-2: %s %q, the scheduler said %q", a.State, a.Why, msg)
		}
		if want := "free nvidia.com/gpu on nodes: elastic pods never preempt, they wait for running pods to end or nodes to be added"; a.Fix != want {
			t.Errorf("fix %q, want %q", a.Fix, want)
		}
		for pod, role := range map[string]string{"g-0": "a min member", "g-1": "an elastic pod (beyond its min; preempted first)"} {
			a := why(t, "pod", ns, pod)
			node := waitBound(t, ns, podsNamed(pod))[pod]
			want := fmt.Sprintf("pod %s/%s is on node %s (NVIDIA-H200), charged to queue %s as %s of gang %s/g (2 placed, minMember 1)", ns, pod, node, ns, role, ns)
			if a.State != inspect.Running || a.Why != want {
				t.Errorf("why %s: %s %q, want %q", pod, a.State, a.Why, want)
			}
		}
	})

	t.Run("reclaimed", func(t *testing.T) {
		nsA := gpuQueue(t, "whyrt-a", 0, 10, false)
		nsB := gpuQueue(t, "whyrt-b", 0, 10, true)
		createPodGroup(t, nsA, "a", 2)
		createPods(t, gangPods(nsA, "a", 8, 1)...)
		waitBound(t, nsA, gangsBound(map[string]int{"a": 8}))
		createPodGroup(t, nsB, "b", 4)
		createPods(t, gangPods(nsB, "b", 4, 1)...)
		waitBound(t, nsB, gangsBound(map[string]int{"b": 4}))
		var victim string
		waitEvent(t, nsA, "a Reclaimed event", func(e eventsv1.Event) bool {
			victim = e.Regarding.Name
			return e.Reason == "Reclaimed"
		})
		a := why(t, "pod", nsA, victim)
		want := regexp.MustCompile(`^reclaimed by whyrt-b/b: queue whyrt-b is below its deserved NVIDIA-H200 share, 0 of \d+$`)
		if a.State != inspect.Evicted || !want.MatchString(a.Why) {
			t.Errorf("why %s: %s %q, want Evicted and %s", victim, a.State, a.Why, want)
		}
	})
}

// TestWhyUnlabelledCards: a pod that names a card model, on a cluster whose
// only GPUs carry no product label, is told so and how to fix it (SPEC §1.4).
func TestWhyUnlabelledCards(t *testing.T) {
	createNodes(t, builder.MakeNode("whyu-0").Res(builder.GPUResource, "4").Obj())
	startScheduler(t)
	ns := createGPUNamespace(t, "whyu")
	createPods(t, builder.MakePod(ns, "p").GPU(1).CardName("NVIDIA-H200").Obj())
	waitScheduledMessage(t, ns, "p", "no product label")
	a := why(t, "pod", ns, "p")
	want := "0/1 nodes are available: 1 node whyu-0's cards have no model (no product label), and the pod asks for NVIDIA-H200. no preemption: no pod that whyu/p may evict (queue whyu)"
	wantFix := "label the nodes' GPUs with their product (GPU feature discovery sets nvidia.com/gpu.product), or drop the pod's card-name annotation"
	if a.State != inspect.Waiting || a.Why != want || a.Fix != wantFix {
		t.Errorf("why p: %s\n %q\n %q\nwant\n %q\n %q", a.State, a.Why, a.Fix, want, wantFix)
	}
}

// TestWhyWithAPodOnAGoneNode: a pod still bound to a node that was deleted
// (its kubelet gone before it) neither breaks why nor counts as a node:
// the answer is the scheduler's, over the nodes that exist.
func TestWhyWithAPodOnAGoneNode(t *testing.T) {
	createNodes(t, gpuNodes("whygone", 1, 4)...)
	startScheduler(t)
	ns := createGPUNamespace(t, "why-gone")
	orphan := builder.MakePod(ns, "orphan").SchedulerName("nobody").Obj()
	orphan.Spec.NodeName = "whygone-deleted"
	createPods(t, orphan)
	createPods(t, builder.MakePod(ns, "p").Label("cardinal.dev/queue", "nowhere").Req("cpu", "1").Obj())
	msg := waitScheduledMessage(t, ns, "p", "does not exist")
	nodes, _, _ := strings.Cut(msg, ":") // "0/N nodes are available", N the nodes that exist
	a := why(t, "pod", ns, "p")
	if a.State != "Waiting" || !strings.HasPrefix(a.Why, nodes+":") || !strings.Contains(a.Why, "queue nowhere does not exist") {
		t.Errorf("why: state %q, why %q; the scheduler said %q", a.State, a.Why, msg)
	}
}
