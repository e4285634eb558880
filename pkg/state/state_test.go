package state

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const h200 = "NVIDIA-H200"

func newTestState(settings ...func(*Settings)) (*State, *testingclock.FakeClock) {
	s := DefaultSettings()
	s.SchedulerName = builder.SchedulerName
	for _, f := range settings {
		f(&s)
	}
	clk := testingclock.NewFakeClock(t0)
	return NewWithClock(s, clk), clk
}

// gangState is a state with queue q (NVIDIA-H200 up to 8), node n of 8
// such cards, and a PodGroup of each min in mins, named as given.
func gangState(mins map[string]int32) (*State, *testingclock.FakeClock) {
	s, clk := newTestState()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 0, 8).Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	for name, m := range mins {
		s.OnPodGroup(podGroup(name, m, nil))
	}
	return s, clk
}

func podGroup(name string, minMember int32, labels map[string]string) *schedv1alpha1.PodGroup {
	return builder.MakePodGroup("ns", name, minMember).UID("pg-" + name).Labels(labels).Created(t0).Obj()
}

// member is pod i of a gang, created i seconds after t0, asking for one card.
func member(group string, i int) *corev1.Pod {
	p := builder.MakePod("ns", fmt.Sprintf("%s-%d", group, i)).Label(schedv1alpha1.PodGroupLabel, group).Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	p.UID = types.UID(p.Name)
	p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Second))
	return p
}

func bound(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// roles is a queue's H200 use: allocated, non-preemptible and elastic.
func roles(s *State) [3]int64 {
	c := s.Cards("q")[h200]
	return [3]int64{c.Allocated, c.NonPreemptible, c.Elastic}
}

// TestDeserved: guarantee first, the rest shared by weight up to what each
// queue asks for, per resource and per card model; a pending pod's card
// alternatives count as what it asks for (SPEC §3.2).
func TestDeserved(t *testing.T) {
	s, _ := newTestState()
	s.OnNode(builder.MakeNode("n").Res(corev1.ResourceCPU, "12").GPU(h200, 8).Obj())
	s.OnQueue(builder.MakeQueue("a").Weight(1).Guarantee(corev1.ResourceCPU, "2").Card(h200, 2, 8).Obj())
	s.OnQueue(builder.MakeQueue("b").Weight(3).Card(h200, 0, 8).Obj())
	for i := range 8 {
		for _, q := range []string{"a", "b"} {
			p := builder.MakePod("ns", fmt.Sprintf("%s-%d", q, i)).Label(v1alpha1.QueueLabel, q).Req(corev1.ResourceCPU, "2").GPU(1).CardName(h200).Obj()
			p.UID = types.UID(p.Name)
			s.OnPod(p)
		}
	}
	a, b := s.Usage("a"), s.Usage("b")
	// cpu: 12, a guaranteed 2, the other 10 shared 1:3 (a asks 16, b 16).
	if got := []int64{a.Deserved[corev1.ResourceCPU], b.Deserved[corev1.ResourceCPU]}; !cmp.Equal(got, []int64{4500, 7500}) {
		t.Errorf("cpu deserved a, b = %v, want 4500m and 7500m", got)
	}
	// H200: 8, a guaranteed 2, the other 6 shared 1:3.
	if got := []int64{a.Cards[h200].Deserved, b.Cards[h200].Deserved}; !cmp.Equal(got, []int64{3, 5}) && !cmp.Equal(got, []int64{4, 4}) {
		t.Errorf("H200 deserved a, b = %v, want about 3.5 and 4.5", got)
	}
	if sum := a.Cards[h200].Deserved + b.Cards[h200].Deserved; sum != 8 {
		t.Errorf("H200 deserved adds up to %d, want all 8", sum)
	}
}

// TestChargesFollowTheAPI: what a pod is charged depends only on what the
// API shows: cardUnlimitedCpuMemory spares card pods cpu and memory; a
// reserved pod counts as allocated; a node re-sliced or deleted under a
// running pod does not change its card charge, and a restart charges it
// the same (SPEC §1.5, §3.1, §4.1).
func TestChargesFollowTheAPI(t *testing.T) {
	unlimited := func(s *Settings) { s.CardUnlimitedCPUMemory = true }
	feed := func(s *State, node *corev1.Node, pods ...*corev1.Pod) {
		s.OnQueue(builder.MakeQueue("q").Capability(corev1.ResourceCPU, "8").Card(h200, 2, 2).Obj())
		s.OnNode(node)
		for _, p := range pods {
			s.OnPod(p)
		}
	}
	node := builder.MakeNode("n").GPU(h200, 2).Obj()
	gpu := builder.MakePod("ns", "gpu").Label(v1alpha1.QueueLabel, "q").Req(corev1.ResourceCPU, "4").GPU(1).Obj()
	gpu.UID = "gpu"
	plain := builder.MakePod("ns", "plain").Label(v1alpha1.QueueLabel, "q").Req(corev1.ResourceCPU, "2").Obj()
	plain.UID = "plain"

	s, _ := newTestState(unlimited)
	feed(s, node, bound(gpu, "n"), plain)
	if st := s.Reserve(plain, "n"); st != nil {
		t.Fatal(st)
	}
	u := s.Usage("q")
	if got := u.Allocated[corev1.ResourceCPU]; got != 2000 {
		t.Errorf("cpu allocated %dm, want 2000m: the card pod is not charged cpu, the reserved plain pod is", got)
	}
	if got := u.Cards[h200].Allocated; got != 1 {
		t.Errorf("H200 allocated %d, want 1", got)
	}

	resliced := node.DeepCopy()
	delete(resliced.Status.Allocatable, builder.GPUResource)
	resliced.Status.Allocatable["nvidia.com/mig-1g.18gb"] = resource.MustParse("7")
	s.OnNode(resliced)
	if got := s.Cards("q")[h200].Allocated; got != 1 {
		t.Errorf("after a re-slice under the pod, H200 allocated %d, want 1", got)
	}
	restarted, _ := newTestState(unlimited)
	feed(restarted, resliced, bound(gpu, "n"))
	if got := restarted.Cards("q")[h200].Allocated; got != 1 {
		t.Errorf("after a restart on the re-sliced node, H200 allocated %d, want 1", got)
	}
	s.OnNodeGone(resliced)
	if got := s.Cards("q")[h200].Allocated; got != 1 {
		t.Errorf("after its node was deleted, H200 allocated %d, want 1 until the pod goes", got)
	}
	s.OnPodDeleted(gpu)
	s.Unreserve(plain)
	u = s.Usage("q")
	if len(u.Allocated) != 0 || u.Cards[h200].Allocated != 0 {
		t.Errorf("after the pods left: allocated %v, H200 %d; want nothing", u.Allocated, u.Cards[h200].Allocated)
	}
}

func TestUnlabelledMessage(t *testing.T) {
	got := unlabelledMessage("n1", []corev1.ResourceName{"amd.com/gpu", "nvidia.com/gpu", "nvidia.com/mig-1g.18gb"})
	for _, want := range []string{"node n1 has amd.com/gpu, nvidia.com/gpu, nvidia.com/mig-1g.18gb", "no label amd.com/gpu.product, nvidia.com/gpu.product:"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q does not contain %q", got, want)
		}
	}
	if unlabelledMessage("n1", nil) != "" {
		t.Error("a node with labelled cards gets a message")
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestCardResourceLearnedLate: a pod asking for a vendor's accelerator that
// only a node's product label makes a card is charged cards of its model,
// whether the node arrived before the pod or after (a restart).
func TestCardResourceLearnedLate(t *testing.T) {
	const tpu = corev1.ResourceName("example.com/tpu")
	node := builder.MakeNode("n").Res(tpu, "4").Label("example.com/tpu.product", "TPU-v5").Obj()
	pod := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "q").Extended(tpu, 2).Obj()
	pod.UID = "p"
	for name, feed := range map[string]func(s *State){
		"node first": func(s *State) { s.OnNode(node); s.OnPod(bound(pod, "n")) },
		"pod first":  func(s *State) { s.OnPod(bound(pod, "n")); s.OnNode(node) },
	} {
		s, _ := newTestState()
		s.OnQueue(builder.MakeQueue("q").Card("TPU-v5", 4, 4).Obj())
		feed(s)
		if got := s.Cards("q")["TPU-v5"].Allocated; got != 2 {
			t.Errorf("%s: TPU-v5 allocated %d, want 2", name, got)
		}
	}
}

// TestProspectOnlyReads: judging a pod the state has not seen yet gives
// its facts as they would be recorded, and records nothing: the books
// change on the informer's path and at Reserve, never in a PreFilter.
func TestProspectOnlyReads(t *testing.T) {
	s, _ := newTestState()
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.QueueLabel: "q"}))
	p := member("g", 0)
	c := s.Prospect(p)
	if c.Queue != "q" || c.Gang != "ns/g" {
		t.Errorf("prospect: queue %q gang %q, want q and ns/g", c.Queue, c.Gang)
	}
	if _, ok := s.ChargeOf(p); ok {
		t.Error("the pod was recorded by a read")
	}
	if g, _ := s.GangStatus("ns/g"); g.Members != 0 {
		t.Errorf("the gang has %d members after a read, want 0", g.Members)
	}
}

// TestReserveRecordsTheInformersCopy: a pod first met at Reserve (the
// state's informer handler not run yet) is recorded as the informer has
// it, not as kube-scheduler's assumed copy, which already names the node:
// recorded from that copy it read as bound there before it was, and kept
// the wrong node's model once it was bound elsewhere.
func TestReserveRecordsTheInformersCopy(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	p := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	p.UID = "p"
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := indexer.Add(p); err != nil {
		t.Fatal(err)
	}
	s.wiring.kube.pods = corelisters.NewPodLister(indexer)
	assumed := p.DeepCopy()
	assumed.Spec.NodeName = "n"
	if st := s.Reserve(assumed, "n"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	placed := s.PlacedIn("q")
	if len(placed) != 1 || placed[0].Bound || placed[0].Node != "n" {
		t.Fatalf("placed %+v, want p reserved on n and not bound", placed)
	}
}

// TestReleasedPodLeavesNoEntry: a pod its controller released (owner
// references changed) is filed anew, so once it is deleted nothing of it
// is left under either controller, however its owner references went.
func TestReleasedPodLeavesNoEntry(t *testing.T) {
	controlled := func(p *corev1.Pod, uid types.UID) *corev1.Pod {
		p = p.DeepCopy()
		p.OwnerReferences = nil
		if uid != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(uid), UID: uid, Controller: ptrTo(true)}}
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		owned []types.UID // the controller of each update in turn
	}{
		{"released", []types.UID{"rs-1", ""}},
		{"adopted", []types.UID{"", "rs-1"}},
		{"moved", []types.UID{"rs-1", "rs-2"}},
		{"moved and back", []types.UID{"rs-1", "rs-2", "rs-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			p := member("g", 0)
			for _, uid := range tc.owned {
				s.OnPod(controlled(p, uid))
			}
			s.mu.RLock()
			last := tc.owned[len(tc.owned)-1]
			if got := len(s.books.podsByController[controllerKey(p.Namespace, last)]); last != "" && got != 1 {
				t.Errorf("filed under %s: %d pods, want 1", last, got)
			}
			s.mu.RUnlock()
			s.OnPodDeleted(controlled(p, last))
			s.mu.RLock()
			defer s.mu.RUnlock()
			if len(s.books.podsByController) != 0 {
				t.Errorf("left under controllers after the pod was deleted: %v", s.books.podsByController)
			}
		})
	}
}
