package soak

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestChecks: each invariant flags what it must, and only that.
func TestChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name, gang, node string, gpus int) corev1.Pod {
		b := builder.MakePod("q", name).GPU(gpus)
		if gang != "" {
			b.Label(schedv1alpha1.PodGroupLabel, gang)
		}
		p := b.Obj()
		p.UID = types.UID(name)
		p.Spec.NodeName = node
		return *p
	}
	evictedPod := func(p corev1.Pod) *corev1.Pod {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}}
		return &p
	}
	tests := []struct {
		name  string
		work  []*workload
		pods  []corev1.Pod
		gone  []*corev1.Pod
		later time.Duration // a second check this long after the first
		want  []string      // substrings of the violations of the last check, in any order
	}{
		{name: "within capability", pods: []corev1.Pod{pod("a", "", "n", 2), pod("b", "", "n", 2)}},
		{name: "over capability", pods: []corev1.Pod{pod("a", "", "n", 2), pod("b", "", "n", 3)},
			want: []string{"queue q uses 5 NVIDIA-H200 cards, capability 4"}},
		{name: "pending pods do not count", pods: []corev1.Pod{pod("a", "", "n", 4), pod("b", "", "", 4)}},
		{name: "partial gang, briefly", work: []*workload{{kind: "gang", name: "g", ns: "q", min: 2, preempt: v1alpha1.Preemptible}},
			pods: []corev1.Pod{pod("g-1", "g", "n", 1), pod("g-2", "g", "", 1)}, later: time.Second},
		{name: "partial gang, too long", work: []*workload{{kind: "gang", name: "g", ns: "q", min: 2, preempt: v1alpha1.Preemptible}},
			pods: []corev1.Pod{pod("g-1", "g", "n", 1), pod("g-2", "g", "", 1)}, later: permitWait + partialGrace + time.Second,
			want: []string{"gang q/g has been bound below its min (1 of 2)"}},
		{name: "partial gang with a shorter scheduleTimeoutSeconds", work: []*workload{{kind: "gang", name: "g", ns: "q", min: 2, preempt: v1alpha1.Preemptible, timeout: time.Second}},
			pods: []corev1.Pod{pod("g-1", "g", "n", 1), pod("g-2", "g", "", 1)}, later: time.Second + partialGrace + time.Second,
			want: []string{"gang q/g has been bound below its min (1 of 2)"}},
		{name: "partial gang with a longer scheduleTimeoutSeconds, which Permit cuts to its own wait", work: []*workload{{kind: "gang", name: "g", ns: "q", min: 2, preempt: v1alpha1.Preemptible, timeout: time.Hour}},
			pods: []corev1.Pod{pod("g-1", "g", "n", 1), pod("g-2", "g", "", 1)}, later: permitWait + partialGrace + time.Second,
			want: []string{"gang q/g has been bound below its min (1 of 2)"}},
		{name: "non-preemptible pod evicted", work: []*workload{{kind: "pod", name: "p", ns: "q", min: 1, preempt: v1alpha1.NonPreemptible}},
			gone: []*corev1.Pod{evictedPod(pod("p", "", "n", 1))}, want: []string{"non-preemptible pod q/p (pod p) was evicted"}},
		{name: "preemptible pod evicted", work: []*workload{{kind: "pod", name: "p", ns: "q", min: 1, preempt: v1alpha1.Preemptible}},
			gone: []*corev1.Pod{evictedPod(pod("p", "", "n", 1))}},
		{name: "pod deleted by its user", work: []*workload{{kind: "pod", name: "p", ns: "q", min: 1, preempt: v1alpha1.NonPreemptible}},
			gone: []*corev1.Pod{ptr.To(pod("p", "", "n", 1))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{work: map[string]*workload{}, queues: []*v1alpha1.Queue{builder.MakeQueue("q").Card(h200, 1, 4).Obj()}}
			for _, wl := range tc.work {
				w.work[wl.ns+"/"+wl.name] = wl
			}
			c := newChecker(w)
			led := c.ledger
			led.setNode("n", map[corev1.ResourceName]string{builder.GPUResource: h200})
			for i := range tc.pods {
				led.seen(&tc.pods[i])
			}
			for _, p := range tc.gone {
				led.seen(p)
				led.gone(p)
			}
			got := c.check(snapshot{pods: tc.pods}, t0)
			if tc.later > 0 {
				got = c.check(snapshot{pods: tc.pods}, t0.Add(tc.later))
			}
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

// TestBoundTwice: a pod seen bound to one node, then another, is flagged.
func TestBoundTwice(t *testing.T) {
	led := newChecker(&world{}).ledger
	p := builder.MakePod("q", "p").Obj()
	p.UID, p.Spec.NodeName = "p", "n1"
	led.seen(p)
	led.seen(p)
	if len(led.violations) != 0 {
		t.Fatalf("the same binding seen twice flagged: %q", led.violations)
	}
	p2 := p.DeepCopy()
	p2.Spec.NodeName = "n2"
	led.seen(p2)
	if len(led.violations) != 1 || !strings.Contains(led.violations[0], "bound twice") {
		t.Fatalf("violations %q, want one saying bound twice", led.violations)
	}
}

// TestGangKeepsItsMin: a semi-preemptible gang that reached its min and
// later has fewer bound is flagged at once; a preemptible one only once
// the grace has passed.
func TestGangKeepsItsMin(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		preempt string
		want    int
	}{{v1alpha1.SemiPreemptible, 1}, {v1alpha1.NonPreemptible, 1}, {v1alpha1.Preemptible, 0}} {
		w := &world{work: map[string]*workload{"q/g": {kind: "gang", name: "g", ns: "q", min: 2, preempt: tc.preempt}}}
		c := newChecker(w)
		member := func(name string) corev1.Pod {
			p := builder.MakePod("q", name).Label(schedv1alpha1.PodGroupLabel, "g").Obj()
			p.Spec.NodeName = "n"
			return *p
		}
		c.gangs(snapshot{pods: []corev1.Pod{member("g-1"), member("g-2"), member("g-3")}}, t0)
		if got := c.gangs(snapshot{pods: []corev1.Pod{member("g-1")}}, t0.Add(time.Second)); len(got) != tc.want {
			t.Errorf("%s gang down to 1 of min 2: violations %q, want %d", tc.preempt, got, tc.want)
		}
		if got := c.gangs(snapshot{}, t0.Add(2*time.Second)); len(got) != tc.want {
			t.Errorf("%s gang down to none: violations %q, want %d", tc.preempt, got, tc.want)
		}
	}
}

// TestModelAfterReslice: a pod that binds to a node after a re-slice took
// its resource away (assumed before the drain) is still counted as the
// node's product, as Cardinal charges it; the recount must not miss it.
func TestModelAfterReslice(t *testing.T) {
	w := &world{queues: []*v1alpha1.Queue{builder.MakeQueue("q").Card(h200, 1, 4).Obj()}}
	c := newChecker(w)
	led := c.ledger
	led.setNode("n", map[corev1.ResourceName]string{builder.GPUResource: h200})
	led.setNode("n", map[corev1.ResourceName]string{migRes: h200MIG})
	p := builder.MakePod("q", "late").GPU(2).Obj()
	p.UID, p.Spec.NodeName = "late", "n"
	led.seen(p)
	if _, cards := c.usage(snapshot{pods: []corev1.Pod{*p}}); cards["q"][h200] != 2 {
		t.Errorf("cards %v, want 2 %s for a whole-card pod bound after its node was re-sliced", cards, h200)
	}
}
