package soak

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

func bookPod(ns, name, gang, node string, gpus int) *corev1.Pod {
	b := builder.MakePod(ns, name).GPU(gpus)
	if gang != "" {
		b.Label(schedv1alpha1.PodGroupLabel, gang)
	}
	p := b.Obj()
	p.UID = types.UID(ns + "/" + name)
	p.Spec.NodeName = node
	return p
}

func reclaimed(p *corev1.Pod, why string) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler, Message: why}}
	return p
}

// TestBooks: the tenancy and books invariants flag what they must, and
// only that.
func TestBooks(t *testing.T) {
	queues := func() []*v1alpha1.Queue {
		return []*v1alpha1.Queue{builder.MakeQueue("qa").Card(h200, 2, 8).Obj(), builder.MakeQueue("qb").Card(h200, 2, 8).Obj()}
	}
	tests := []struct {
		name string
		work []*workload
		pods []*corev1.Pod
		// boundAgo: how long before now each pod was first seen bound.
		boundAgo time.Duration
		want     []string
	}{
		{name: "a tenant's pod of a queue it may use", work: []*workload{{kind: "pod", name: "p", ns: "t", queue: "qa", preempt: v1alpha1.Preemptible}},
			pods: []*corev1.Pod{bookPod("t", "p", "", "n", 1)}},
		{name: "a tenant's pod of a queue it may not use, pending", work: []*workload{{kind: "pod", name: "p", ns: "t", queue: "qa", denied: true}},
			pods: []*corev1.Pod{bookPod("t", "p", "", "", 1)}},
		{name: "a tenant's pod of a queue it may not use, bound", work: []*workload{{kind: "pod", name: "p", ns: "t", queue: "qa", denied: true}},
			pods: []*corev1.Pod{bookPod("t", "p", "", "n", 1)}, want: []string{"pod t/p bound to n in queue qa, which namespace t may not use"}},
		{name: "non-preemptible within guarantee", work: []*workload{{kind: "gang", name: "g", ns: "qa", queue: "qa", min: 2, preempt: v1alpha1.NonPreemptible}},
			pods: []*corev1.Pod{bookPod("qa", "g-1", "g", "n", 1), bookPod("qa", "g-2", "g", "n", 1)}},
		{name: "non-preemptible over guarantee", work: []*workload{{kind: "gang", name: "g", ns: "qa", queue: "qa", min: 3, preempt: v1alpha1.NonPreemptible}},
			pods: []*corev1.Pod{bookPod("qa", "g-1", "g", "n", 1), bookPod("qa", "g-2", "g", "n", 1), bookPod("qa", "g-3", "g", "n", 1)},
			want: []string{"queue qa's non-preemptible work uses 3 NVIDIA-H200 cards, guarantee 2"}},
		{name: "semi-preemptible: only its min counts", work: []*workload{{kind: "gang", name: "g", ns: "qa", queue: "qa", min: 2, preempt: v1alpha1.SemiPreemptible}},
			pods: []*corev1.Pod{bookPod("qa", "g-1", "g", "n", 1), bookPod("qa", "g-2", "g", "n", 1), bookPod("qa", "g-3", "g", "n", 1)}},
		{name: "semi-preemptible: its min over guarantee", work: []*workload{{kind: "gang", name: "g", ns: "qa", queue: "qa", min: 2, preempt: v1alpha1.SemiPreemptible}},
			pods: []*corev1.Pod{bookPod("qa", "g-1", "g", "n", 2), bookPod("qa", "g-2", "g", "n", 2)},
			want: []string{"uses 4 NVIDIA-H200 cards, guarantee 2"}},
		{name: "a pod relabelled to another queue stays in its own", work: []*workload{{kind: "pod", name: "p", ns: "qa", queue: "qa", preempt: v1alpha1.NonPreemptible}},
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := bookPod("qa", "p", "", "n", 2)
				p.Labels[v1alpha1.QueueLabel] = "qb"
				return p
			}()}},
		{name: "a Deployment relabelled non-preemptible: pods placed before stay preemptible",
			work:     []*workload{{kind: "deployment", name: "d", ns: "qa", queue: "qa", preempt: v1alpha1.Preemptible, preemptAfter: v1alpha1.NonPreemptible, relabelledAt: time.Now()}},
			pods:     []*corev1.Pod{deployPod("qa", "d", "d-1", 2), deployPod("qa", "d", "d-2", 2)},
			boundAgo: time.Minute},
		{name: "a Deployment relabelled non-preemptible: pods placed after are",
			work:     []*workload{{kind: "deployment", name: "d", ns: "qa", queue: "qa", preempt: v1alpha1.Preemptible, preemptAfter: v1alpha1.NonPreemptible, relabelledAt: time.Now().Add(-time.Minute)}},
			pods:     []*corev1.Pod{deployPod("qa", "d", "d-1", 2), deployPod("qa", "d", "d-2", 2)},
			boundAgo: 0, want: []string{"queue qa's non-preemptible work uses 4 NVIDIA-H200 cards, guarantee 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{work: map[string]*workload{}, queues: queues()}
			for _, wl := range tc.work {
				w.work[wl.ns+"/"+wl.name] = wl
			}
			c := newChecker(w)
			c.ledger.setNode("n", map[corev1.ResourceName]string{builder.GPUResource: h200})
			var pods []corev1.Pod
			for _, p := range tc.pods {
				c.ledger.seen(p)
				if p.Spec.NodeName != "" {
					c.ledger.boundAt[p.UID] = time.Now().Add(-tc.boundAgo)
				}
				pods = append(pods, *p)
			}
			got := c.check(snapshot{pods: pods}, time.Now())
			if len(got) != len(tc.want) {
				t.Fatalf("violations %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for _, want := range tc.want {
				if !strings.Contains(strings.Join(got, "\n"), want) {
					t.Errorf("violations %q, want one saying %q", got, want)
				}
			}
		})
	}
}

func deployPod(ns, app, name string, gpus int) *corev1.Pod {
	p := bookPod(ns, name, "", "n", gpus)
	p.Labels["app"] = app
	return p
}

// TestBackAndForth: a reclaim and its reverse in one epoch are flagged;
// across a change, or of another model, they are not.
func TestBackAndForth(t *testing.T) {
	why := func(by string) string {
		return "reclaimed by " + by + "/g: queue " + by + " is below its deserved NVIDIA-H200 share, 1 of 4"
	}
	for _, tc := range []struct {
		name    string
		between bool // the run changed something between the two
		second  string
		want    int
	}{
		{name: "back and forth", second: why("qb"), want: 1},
		{name: "after a change", between: true, second: why("qb")},
		{name: "the same way again", second: why("qa")},
		{name: "another model", second: strings.Replace(why("qb"), "NVIDIA-H200", "NVIDIA-A100", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{work: map[string]*workload{
				"qa/a": {kind: "pod", name: "a", ns: "qa", queue: "qa"},
				"qb/b": {kind: "pod", name: "b", ns: "qb", queue: "qb"},
			}}
			c := newChecker(w)
			c.ledger.seen(reclaimed(bookPod("qb", "b", "", "n", 1), why("qa")))
			if got := c.backAndForth(); len(got) != 0 {
				t.Fatalf("one reclaim flagged: %q", got)
			}
			w.changes.times = nil // the pods' arrival, long before`)
			if tc.between {
				w.changed()
			}
			victim := "qa/a"
			if tc.second == why("qa") {
				victim = "qb/b"
			}
			ns, name, _ := strings.Cut(victim, "/")
			p := reclaimed(bookPod(ns, name, "", "n", 1), tc.second)
			p.UID = "second"
			c.ledger.pending[p.UID] = true // seen before, pending
			c.ledger.seen(p)
			if got := c.backAndForth(); len(got) != tc.want {
				t.Errorf("violations %q, want %d", got, tc.want)
			}
		})
	}
}

// TestSecondRounds: a round of evictions for a preemptor that begins while
// a victim of its earlier round terminates is flagged; one that begins
// after the victims are gone, or another preemptor's, is not.
func TestSecondRounds(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name           string
		gone           time.Duration // when the first victim went, after t0
		secondAt       time.Duration // when the second round's victim was marked
		otherPreemptor bool
		otherReason    bool // the first victim was marked for another preemptor
		want           int
	}{
		{name: "while the victim terminates", gone: 10 * time.Second, secondAt: 5 * time.Second, want: 1},
		{name: "after the victim went", gone: 3 * time.Second, secondAt: 5 * time.Second},
		{name: "another preemptor's", gone: 10 * time.Second, secondAt: 5 * time.Second, otherPreemptor: true},
		{name: "a victim that ended for another reason", gone: 10 * time.Second, secondAt: 5 * time.Second, otherReason: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(&world{work: map[string]*workload{}})
			l := c.ledger
			v1, v2 := bookPod("qb", "v1", "", "n", 1), bookPod("qb", "v2", "", "n", 1)
			second := "qa/g"
			if tc.otherPreemptor {
				second = "qa/h"
			}
			firstWhy := "preempted by qa/g: its min needs room"
			if tc.otherReason {
				firstWhy = "reclaimed by qc/x: queue qc is below its deserved NVIDIA-H200 share, 1 of 4"
			}
			l.targets = append(l.targets, target{pod: v1, at: t0, why: firstWhy},
				target{pod: v2, at: t0.Add(tc.secondAt), why: "preempted by " + second + ": its min needs room"})
			l.terminatingAt["qb/v1"] = t0.Add(100 * time.Millisecond)
			l.goneAt["qb/v1"] = t0.Add(tc.gone)
			for i, m := range []struct{ by, victim string }{{"qa/g", "qb/v1"}, {second, "qb/v2"}} {
				ns, name, _ := strings.Cut(m.by, "/")
				l.preempting(&corev1.Event{ObjectMeta: metav1.ObjectMeta{UID: types.UID(rune('a' + i))},
					InvolvedObject: corev1.ObjectReference{Namespace: ns, Name: name},
					Message:        "evicted 1 pod on 1 node for its min of 2: " + m.victim + "; its members are nominated there and the room is kept for them"})
			}
			if got := c.secondRounds(snapshot{}); len(got) != tc.want {
				t.Errorf("violations %q, want %d", got, tc.want)
			}
		})
	}
}

// TestVictimsOf reads the victims of a Preempting event as Cardinal writes
// them, a long list cut short.
func TestVictimsOf(t *testing.T) {
	got, ok := victimsOf("evicted 10 pods on 2 nodes for its min of 4: a/x, a/y and 8 more; its members are nominated there and the room is kept for them")
	if !ok || strings.Join(got, " ") != "a/x a/y" {
		t.Errorf("victimsOf = %q, %v", got, ok)
	}
	if _, ok := victimsOf("gang a/g has had 2 of its minMember 3 pods bound"); ok {
		t.Error("a message of no round read as one")
	}
}
