package state

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/workload"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// TestPodsWaitForTheGrouper: a pod of a workload Cardinal may group is held
// at PreEnqueue until the grouper rules on it (SPEC §7: not scheduled one
// by one before its PodGroup exists), and woken, through the outbox, when
// it is ruled a gang of one; a pod of a kind not grouped, one without a
// controller, and one already in a PodGroup are not held.
func TestPodsWaitForTheGrouper(t *testing.T) {
	jobPod := func(name string) *corev1.Pod {
		p := builder.MakePod("ns", name).ControlledBy("batch/v1", "Job", "train", "job-uid").Obj()
		p.UID = types.UID("uid-" + name)
		return p
	}
	tests := []struct {
		name  string
		kinds workload.Kinds
		pod   *corev1.Pod
		held  bool
	}{
		{"a Job's pod waits", workload.NewKinds(workload.Job), jobPod("a"), true},
		{"a JobSet's pod (its Job's) waits", workload.NewKinds(workload.JobSet), jobPod("b"), true},
		{"nothing grouped: no wait", workload.Kinds{}, jobPod("c"), false},
		{"a kind not grouped: no wait", workload.NewKinds(workload.RayCluster), jobPod("d"), false},
		{"a pod without a controller: no wait", workload.NewKinds(workload.Job), builder.MakePod("ns", "e").Obj(), false},
		{"a pod in a PodGroup is its gang's to admit", workload.NewKinds(workload.Job),
			builder.MakePod("ns", "f").ControlledBy("batch/v1", "Job", "train", "job-uid").Label(schedv1alpha1.PodGroupLabel, "mine").Obj(), false},
		{"a pod of another scheduler: no wait", workload.NewKinds(workload.Job),
			builder.MakePod("ns", "g").ControlledBy("batch/v1", "Job", "train", "job-uid").SchedulerName("default-scheduler").Obj(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState(func(st *Settings) { st.GroupedKinds = tc.kinds })
			s.OnPod(tc.pod)
			st := s.AdmitGang(tc.pod)
			var awaiting refusal.AwaitingGroup
			if r, ok := refusal.As(st); ok {
				awaiting, _ = r.(refusal.AwaitingGroup)
			}
			held := awaiting.Pod != ""
			if held != tc.held {
				t.Fatalf("held = %v (%v), want %v", held, st, tc.held)
			}
			if !tc.held {
				return
			}
			if st.Code() != fwk.UnschedulableAndUnresolvable {
				t.Errorf("code %v, want UnschedulableAndUnresolvable", st.Code())
			}
			if !s.AwaitsGrouping(tc.pod) {
				t.Error("AwaitsGrouping = false for a held pod")
			}
			s.Flush(&fake.Framework{})
			if !s.Ungrouped(tc.pod) {
				t.Fatal("Ungrouped refused a recorded pod")
			}
			fw := &fake.Framework{}
			s.Flush(fw)
			if diff := cmp.Diff([]string{"ns/" + tc.pod.Name}, fw.Activated()); diff != "" {
				t.Errorf("woken (-want, +got):\n%s", diff)
			}
			if st := s.AdmitGang(tc.pod); st != nil {
				t.Errorf("a pod ruled a gang of one is still held: %v", st)
			}
			if s.AwaitsGrouping(tc.pod) {
				t.Error("AwaitsGrouping = true for a pod ruled a gang of one")
			}
		})
	}
}

// TestUngroupedBeforeThePodArrives: a ruling on a pod the state has not
// recorded is refused, so the grouper asks again rather than lose it; a
// deleted pod leaves nothing waiting.
func TestUngroupedBeforeThePodArrives(t *testing.T) {
	s, _ := newTestState(func(st *Settings) { st.GroupedKinds = workload.NewKinds(workload.Job) })
	p := builder.MakePod("ns", "a").ControlledBy("batch/v1", "Job", "train", "job-uid").Obj()
	p.UID = "a"
	if s.Ungrouped(p) {
		t.Fatal("a ruling on a pod not recorded was taken")
	}
	s.OnPod(p)
	s.AdmitGang(p)
	s.OnPodDeleted(p)
	if len(s.waits.grouping) != 0 {
		t.Errorf("a deleted pod still waits for the grouper: %v", s.waits.grouping)
	}
}

// TestNativePodGroupIsAGang: a pod joined to Kubernetes' own PodGroup by
// spec.schedulingGroup is a gang's member (SPEC §1.2): its minCount is the
// min, the gang waits for its PodGroup and its min, and is woken when the
// PodGroup comes (kube-scheduler has no event of it while its own gang
// handling is off). A PodGroup of the same name in scheduler-plugins' API
// is another gang.
func TestNativePodGroupIsAGang(t *testing.T) {
	s, _ := newTestState()
	pods := make([]*corev1.Pod, 3)
	for i := range pods {
		pods[i] = builder.MakePod("ns", fmt.Sprintf("w-%d", i)).SchedulingGroup("train").GPU(1).Obj()
		pods[i].UID = types.UID(pods[i].Name)
		s.OnPod(pods[i])
	}
	k := gang.NativeKey("ns", "train")
	if got, ok := gang.Of(pods[0]); !ok || got != k {
		t.Fatalf("gang.Of = %q, %v; want %q", got, ok, k)
	}
	if r, _ := refusal.As(s.AdmitGang(pods[0])); !cmp.Equal(r, refusal.Refusal(refusal.NoPodGroup{Gang: string(k)})) {
		t.Errorf("before its PodGroup: %v, want NoPodGroup", r)
	}
	s.Flush(&fake.Framework{})
	native := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", UID: "npg", Labels: map[string]string{"cardinal.dev/queue": "q"}},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}},
	}
	s.OnNativePodGroup(native)
	fw := &fake.Framework{}
	s.Flush(fw)
	if len(fw.Activated()) != 3 {
		t.Errorf("its PodGroup's coming woke %v, want its 3 pods", fw.Activated())
	}
	if r, _ := refusal.As(s.AdmitGang(pods[0])); !cmp.Equal(r, refusal.Refusal(refusal.GangIncomplete{Gang: string(k), Have: 3, Min: 4})) {
		t.Errorf("3 pods of min 4: %v, want GangIncomplete", r)
	}
	if v, ok := s.GangStatus(k); !ok || v.Group == nil || v.Group.Spec.MinMember != 4 {
		t.Fatalf("gang status %+v, want minMember 4", v)
	}
	if e := s.books.pods[pods[0].UID]; e.Queue != "q" {
		t.Errorf("queue %q, want q from the PodGroup's label", e.Queue)
	}
	lowered := native.DeepCopy()
	lowered.Spec.SchedulingPolicy.Gang.MinCount = 3
	s.OnNativePodGroup(lowered)
	if st := s.AdmitGang(pods[0]); st != nil {
		t.Errorf("min lowered to the 3 pods there are: %v, want admitted", st)
	}
	basic := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "solo", UID: "b"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}}
	if got := nativeGroup(basic).Spec.MinMember; got != 1 {
		t.Errorf("a basic policy's min = %d, want 1", got)
	}
	s.OnPodGroup(podGroup("train", 2, nil))
	if v, _ := s.GangStatus(k); v.Group.Spec.MinMember != 3 {
		t.Errorf("a scheduler-plugins PodGroup of the same name changed the native gang's min to %d", v.Group.Spec.MinMember)
	}
	s.OnNativePodGroupGone(lowered)
	if r, _ := refusal.As(s.AdmitGang(pods[0])); !cmp.Equal(r, refusal.Refusal(refusal.NoPodGroup{Gang: string(k)})) {
		t.Errorf("its PodGroup gone: %v, want NoPodGroup", r)
	}
}

// TestGroupedJoinsItsGang: a pod the grouper rules a member of its
// workload's gang joins it in the state at once, with no label (GangOf);
// when the gang's last member joins, its waiting members are woken; the
// Binding is told which PodGroup to write; a pod gone leaves nothing.
func TestGroupedJoinsItsGang(t *testing.T) {
	// Pods with resource claims too, once their claims exist.
	for _, claims := range []bool{false, true} {
		t.Run(fmt.Sprintf("claims=%v", claims), func(t *testing.T) { testGroupedJoinsItsGang(t, claims) })
	}
}

func testGroupedJoinsItsGang(t *testing.T, claims bool) {
	s, _ := newTestState(func(st *Settings) { st.GroupedKinds = workload.NewKinds(workload.Job) })
	s.OnPodGroup(podGroup("train", 2, nil))
	store := withClaims(s)
	pods := make([]*corev1.Pod, 2)
	for i := range pods {
		pods[i] = builder.MakePod("ns", fmt.Sprintf("train-%d", i)).ControlledBy("batch/v1", "Job", "train", "job-uid").GPU(1).Obj()
		pods[i].UID = types.UID(pods[i].Name)
		if claims {
			pods[i].Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo(pods[i].Name)}}
			store.set(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pods[i].Name}})
		}
		s.OnPod(pods[i])
		if _, ok := refusal.As(s.AdmitGang(pods[i])); !ok {
			t.Fatalf("pod %s not held for the grouper", pods[i].Name)
		}
	}
	if got := s.AwaitingGroupingUnder(pods[0]); len(got) != 2 {
		t.Fatalf("awaiting under the Job: %d pods, want 2", len(got))
	}
	s.Flush(&fake.Framework{})
	k := gang.Key("ns/train")
	if unrecorded := s.Grouped(pods, k); len(unrecorded) != 0 {
		t.Fatalf("unrecorded %v", unrecorded)
	}
	fw := &fake.Framework{}
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/train-0", "ns/train-1"}, fw.Activated()); diff != "" {
		t.Errorf("woken (-want, +got):\n%s", diff)
	}
	for _, p := range pods {
		if got, ok := s.GangOf(p); !ok || got != k {
			t.Errorf("GangOf(%s) = %q, %v; want %q", p.Name, got, ok, k)
		}
		if s.AwaitsGrouping(p) {
			t.Errorf("%s still awaits the grouper", p.Name)
		}
		if got := s.GroupedInto(p); got != "train" {
			t.Errorf("GroupedInto(%s) = %q, want train", p.Name, got)
		}
	}
	if st := s.AdmitGang(pods[0]); st != nil {
		t.Errorf("a whole gang is held: %v", st)
	}
	if v, _ := s.GangStatus(k); len(s.GangPods(k)) != 2 || v.Group == nil {
		t.Errorf("gang %+v has %d pods, want 2", v, len(s.GangPods(k)))
	}
	s.OnPodDeleted(pods[1])
	if _, ok := s.GangOf(pods[1]); ok {
		t.Error("a deleted pod keeps its gang")
	}
}

// TestGroupedLateJoinerIsWoken: a pod put in a gang that is whole already
// (a pod beyond its min, one made anew) is woken: no pod arrival or label
// change would wake it.
func TestGroupedLateJoinerIsWoken(t *testing.T) {
	s, _ := newTestState(func(st *Settings) { st.GroupedKinds = workload.NewKinds(workload.Job) })
	s.OnPodGroup(podGroup("train", 1, nil))
	k := gang.Key("ns/train")
	first := builder.MakePod("ns", "train-0").ControlledBy("batch/v1", "Job", "train", "job-uid").GPU(1).Obj()
	first.UID = "train-0"
	s.OnPod(first)
	s.AdmitGang(first)
	s.Grouped([]*corev1.Pod{first}, k)
	s.Flush(&fake.Framework{})
	late := builder.MakePod("ns", "train-1").ControlledBy("batch/v1", "Job", "train", "job-uid").GPU(1).Obj()
	late.UID = "train-1"
	s.OnPod(late)
	if _, ok := refusal.As(s.AdmitGang(late)); !ok {
		t.Fatal("the late pod is not held for the grouper")
	}
	s.Flush(&fake.Framework{})
	s.Grouped([]*corev1.Pod{late}, k)
	fw := &fake.Framework{}
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/train-1"}, fw.Activated()); diff != "" {
		t.Errorf("woken (-want, +got):\n%s", diff)
	}
}

// TestNeverMovedIntoAGangOnceQueued: a pod let into the scheduling queue
// alone (its controller of a kind not grouped then, as a bare pod later
// adopted), or let through while PodGroups could not be read, is not put
// in a gang afterwards; and a pod of another namespace naming the same
// controller UID is no sibling.
func TestNeverMovedIntoAGangOnceQueued(t *testing.T) {
	s, _ := newTestState(func(st *Settings) { st.GroupedKinds = workload.NewKinds(workload.Job) })
	adopted := builder.MakePod("ns", "adopted").Obj()
	adopted.UID = "adopted"
	s.OnPod(adopted)
	if st := s.AdmitGang(adopted); st != nil {
		t.Fatalf("a bare pod was held: %v", st)
	}
	adopted = adopted.DeepCopy()
	adopted.OwnerReferences = builder.MakePod("", "").ControlledBy("batch/v1", "Job", "train", "job-uid").Obj().OwnerReferences
	s.OnPod(adopted)
	if s.AwaitsGrouping(adopted) {
		t.Error("a pod already in the scheduling queue awaits the grouper after an adoption")
	}
	held := builder.MakePod("ns", "held").ControlledBy("batch/v1", "Job", "train", "job-uid").Obj()
	held.UID = "held"
	s.OnPod(held)
	s.AdmitGang(held)
	stranger := builder.MakePod("other", "stranger").ControlledBy("batch/v1", "Job", "x", "job-uid").Obj()
	stranger.UID = "stranger"
	s.OnPod(stranger)
	s.AdmitGang(stranger)
	if got := s.AwaitingGroupingUnder(held); len(got) != 1 || got[0].UID != "held" {
		t.Errorf("siblings of held: %v, want only itself", got)
	}
	s.Grouped([]*corev1.Pod{held, stranger, adopted}, gang.Key("ns/train"))
	if _, ok := s.GangOf(stranger); ok {
		t.Error("a pod of another namespace was put in the gang")
	}
	if _, ok := s.GangOf(adopted); ok {
		t.Error("a pod already queued alone was put in the gang")
	}
	if _, ok := s.GangOf(held); !ok {
		t.Error("the held pod was not put in its gang")
	}
}

// TestReleasedPodsAwaitARulingAgain: the PodGroup the grouper made is
// deleted while its pods wait and their workload no longer asks for a
// gang: the pods leave the gang and await a ruling again, rather than
// wait for a PodGroup no one will make; a placed pod keeps its gang.
func TestReleasedPodsAwaitARulingAgain(t *testing.T) {
	s, _ := newTestState(func(st *Settings) { st.GroupedKinds = workload.NewKinds(workload.Job) })
	pg := podGroup("train", 2, nil)
	s.OnPodGroup(pg)
	k := gang.Key("ns/train")
	pods := make([]*corev1.Pod, 3)
	for i := range pods {
		pods[i] = builder.MakePod("ns", fmt.Sprintf("train-%d", i)).ControlledBy("batch/v1", "Job", "train", "job-uid").GPU(1).Obj()
		pods[i].UID = types.UID(pods[i].Name)
		s.OnPod(pods[i])
	}
	s.Grouped(pods, k)
	if released, stillThere := s.Released(k); released || !stillThere {
		t.Fatalf("while its PodGroup exists: released %v, still there %v; want false, true", released, stillThere)
	}
	s.OnPod(bound(pods[2], "n"))
	if got := s.GangMember(k); got == nil || got.Name == "train-2" {
		t.Errorf("GangMember = %v; want a pod not placed", got)
	}
	s.OnPodGroupGone(pg)
	s.Flush(&fake.Framework{})
	if released, stillThere := s.Released(k); !released || stillThere {
		t.Fatalf("once its PodGroup is gone: released %v, still there %v; want true, false", released, stillThere)
	}
	fw := &fake.Framework{}
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/train-0", "ns/train-1"}, fw.Activated()); diff != "" {
		t.Errorf("woken (-want, +got):\n%s", diff)
	}
	for _, p := range pods[:2] {
		if got, ok := s.GangOf(p); ok {
			t.Errorf("GangOf(%s) = %q; want none", p.Name, got)
		}
		if !s.AwaitsGrouping(p) {
			t.Errorf("%s does not await a ruling", p.Name)
		}
	}
	if got, ok := s.GangOf(pods[2]); !ok || got != k {
		t.Errorf("the bound pod's gang is %q, %v; want %q", got, ok, k)
	}
	if released, _ := s.Released(k); released {
		t.Error("released twice")
	}
}
