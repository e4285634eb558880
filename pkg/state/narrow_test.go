package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// TestAfterNarrowingMiss: a PostFilter in a cycle that was not narrowed,
// or that a PreFilter refused, has nothing to do; in one that was narrowed
// and filtered, the pod is woken at once and again after rewakeAfter, the
// status says where it was tried, and neither it nor its gang's other pod
// is narrowed again.
func TestAfterNarrowingMiss(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	settings := DefaultSettings()
	settings.SchedulerName = builder.SchedulerName
	s := NewWithClock(settings, clk)
	s.OnPodGroup(&schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "g"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}})
	var pod, sibling *corev1.Pod
	for i, p := range []**corev1.Pod{&pod, &sibling} {
		*p = builder.MakePod("ns", fmt.Sprintf("g-%d", i)).Label(schedv1alpha1.PodGroupLabel, "g").GPU(1).CardName(h200).Obj()
		(*p).UID = types.UID((*p).Name)
		s.OnPod(*p)
	}
	s.Flush(&fake.Framework{})

	filtered := framework.NewDefaultNodeToStatus()
	filtered.Set("n", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	if s.AfterNarrowingMiss(framework.NewCycleState(), pod, filtered) != nil {
		t.Fatalf("a cycle that was not narrowed says it was")
	}
	if s.Prospect(pod).NarrowMissed {
		t.Fatalf("the pod is marked before any narrowed cycle missed")
	}

	cs := framework.NewCycleState()
	MarkNarrowed(cs, h200, 1)
	refused := framework.NewDefaultNodeToStatus() // a PreFilter refused the pod: no node filtered
	refused.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "queue quota"))
	if s.AfterNarrowingMiss(cs, pod, refused) != nil {
		t.Fatalf("a cycle a PreFilter refused says narrowing missed")
	}
	fw := &fake.Framework{}
	for range 2 { // every Cardinal PostFilter of the cycle asks
		st := s.AfterNarrowingMiss(cs, pod, filtered)
		if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "tried first on the 1 node of NVIDIA-H200") {
			t.Fatalf("got %v, want UnschedulableAndUnresolvable saying where it was tried", st)
		}
	}
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/g-0"}, fw.Activated()); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	// Woken again once kube-scheduler has put it back in its queue.
	clk.Step(rewakeAfter)
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/g-0", "ns/g-0"}, fw.Activated()); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	if !s.Prospect(pod).NarrowMissed || !s.Prospect(sibling).NarrowMissed {
		t.Errorf("the pod or its gang's other pod would be narrowed again")
	}
	// A pod that joins the gang later (a replica made anew) is not
	// narrowed either.
	later := builder.MakePod("ns", "g-2").Label(schedv1alpha1.PodGroupLabel, "g").GPU(1).CardName(h200).Obj()
	later.UID = "g-2"
	s.OnPod(later)
	if !s.Prospect(later).NarrowMissed {
		t.Errorf("a pod that joined the gang after its miss would be narrowed again")
	}
	// Once its min is bound, the gang's next pods are narrowed anew.
	for _, p := range []*corev1.Pod{pod, sibling} {
		b := p.DeepCopy()
		b.Spec.NodeName = "n"
		s.OnPod(b)
	}
	if s.Prospect(later).NarrowMissed {
		t.Errorf("the gang's pods are not narrowed again after its min was bound")
	}
	// A pod that misses once the min is bound (an elastic pod) is tried
	// on every node itself; the gang's other pods are still narrowed.
	elastic := builder.MakePod("ns", "g-3").Label(schedv1alpha1.PodGroupLabel, "g").GPU(1).CardName(h200).Obj()
	elastic.UID = "g-3"
	s.OnPod(elastic)
	cs = framework.NewCycleState()
	MarkNarrowed(cs, h200, 1)
	if s.AfterNarrowingMiss(cs, elastic, filtered) == nil {
		t.Fatalf("a narrowed cycle that missed says it did not")
	}
	if !s.Prospect(elastic).NarrowMissed || s.Prospect(later).NarrowMissed {
		t.Errorf("after a miss past the min: missed pod %v, the gang's other pending pod %v; want true, false",
			s.Prospect(elastic).NarrowMissed, s.Prospect(later).NarrowMissed)
	}
}

// TestNarrowMissedPodGroupMadeAnew: a PodGroup deleted and made anew under
// the same name, its pods outliving it, waits and is narrowed anew.
func TestNarrowMissedPodGroupMadeAnew(t *testing.T) {
	settings := DefaultSettings()
	settings.SchedulerName = builder.SchedulerName
	s := NewWithClock(settings, testingclock.NewFakeClock(t0))
	s.OnPodGroup(&schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "g"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}})
	pod := builder.MakePod("ns", "g-0").Label(schedv1alpha1.PodGroupLabel, "g").GPU(1).CardName(h200).Obj()
	pod.UID = "g-0"
	s.OnPod(pod)
	cs := framework.NewCycleState()
	MarkNarrowed(cs, h200, 1)
	filtered := framework.NewDefaultNodeToStatus()
	filtered.Set("n", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	if s.AfterNarrowingMiss(cs, pod, filtered) == nil || !s.Prospect(pod).NarrowMissed {
		t.Fatalf("the miss was not recorded")
	}
	s.OnPodGroup(&schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "g2"}, Spec: schedv1alpha1.PodGroupSpec{MinMember: 2}})
	if s.Prospect(pod).NarrowMissed {
		t.Errorf("the PodGroup made anew kept the old one's miss")
	}
}
