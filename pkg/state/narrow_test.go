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
)

// TestNodesOf: the nodes of each card model follow nodes as they come,
// change models and go; a list is made again only after its model's nodes
// changed.
func TestNodesOf(t *testing.T) {
	const rtx = "NVIDIA-GeForce-RTX-4090"
	gpu := corev1.ResourceName(builder.GPUResource)
	s := New(DefaultSettings())
	for _, n := range []*corev1.Node{
		builder.MakeNode("b").GPU(h200, 8).Obj(),
		builder.MakeNode("a").GPU(h200, 8).Obj(),
		builder.MakeNode("c").GPU(rtx, 8).Obj(),
		builder.MakeNode("cpu").Obj(),
	} {
		s.OnNode(n)
	}
	steps := []struct {
		name      string
		change    func()
		h200, rtx []string
	}{
		{name: "as added, sorted", change: func() {}, h200: []string{"a", "b"}, rtx: []string{"c"}},
		{name: "a heartbeat changes nothing", change: func() { s.OnNode(builder.MakeNode("a").GPU(h200, 8).Label("beat", "1").Obj()) },
			h200: []string{"a", "b"}, rtx: []string{"c"}},
		{name: "relabelled", change: func() { s.OnNode(builder.MakeNode("b").GPU(rtx, 8).Obj()) },
			h200: []string{"a"}, rtx: []string{"b", "c"}},
		{name: "no cards left allocatable", change: func() { s.OnNode(builder.MakeNode("c").GPU(rtx, 0).Obj()) },
			h200: []string{"a"}, rtx: []string{"b"}},
		{name: "gone", change: func() { s.OnNodeGone(builder.MakeNode("a").Obj()) },
			rtx: []string{"b"}},
	}
	for _, st := range steps {
		st.change()
		if diff := cmp.Diff(st.h200, s.NodesOf(gpu, h200)); diff != "" {
			t.Errorf("%s: H200 nodes (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.rtx, s.NodesOf(gpu, rtx)); diff != "" {
			t.Errorf("%s: 4090 nodes (-want +got):\n%s", st.name, diff)
		}
	}
	if got := s.NodesOf(gpu, "NVIDIA-A100"); got != nil {
		t.Errorf("nodes of a model no node has: %v", got)
	}
	if first, again := s.NodesOf(gpu, rtx), s.NodesOf(gpu, rtx); &first[0] != &again[0] {
		t.Errorf("the list was made again without a change")
	}
}

// TestNarrowingMissed: a PostFilter in a cycle that was not narrowed has
// nothing to do; in one that was, the pod is woken once, says where it was
// tried, and is not narrowed again.
func TestNarrowingMissed(t *testing.T) {
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
	s.Flush(&fakeFramework{})

	filtered := framework.NewDefaultNodeToStatus()
	filtered.Set("n", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	if _, narrowed := s.NarrowingMissed(framework.NewCycleState(), pod, filtered); narrowed {
		t.Fatalf("a cycle that was not narrowed says it was")
	}
	if s.Candidate(pod).NarrowMissed {
		t.Fatalf("the pod is marked before any narrowed cycle missed")
	}

	cs := framework.NewCycleState()
	MarkNarrowed(cs, h200, 1)
	refused := framework.NewDefaultNodeToStatus() // a PreFilter refused the pod: no node filtered
	refused.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "queue quota"))
	if _, narrowed := s.NarrowingMissed(cs, pod, refused); narrowed {
		t.Fatalf("a cycle a PreFilter refused says narrowing missed")
	}
	fw := &fakeFramework{}
	for range 2 { // every Cardinal PostFilter of the cycle asks
		msg, narrowed := s.NarrowingMissed(cs, pod, filtered)
		if !narrowed || !strings.Contains(msg, "tried first on the 1 node of NVIDIA-H200") {
			t.Fatalf("got %v %q, want narrowed and where it was tried", narrowed, msg)
		}
	}
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/g-0"}, fw.activated); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	// Woken again once kube-scheduler has put it back in its queue.
	clk.Step(rewakeAfter)
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/g-0", "ns/g-0"}, fw.activated); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	if !s.Candidate(pod).NarrowMissed || !s.Candidate(sibling).NarrowMissed {
		t.Errorf("the pod or its gang's other pod would be narrowed again")
	}
}
