package state

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/workload"
	"cardinal.dev/cardinal/test/builder"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const h200 = "NVIDIA-H200"

// fakeFramework records what the state asks of the framework.
type fakeFramework struct {
	mu        sync.Mutex
	activated []string
	events    []string
}

func (f *fakeFramework) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range pods {
		f.activated = append(f.activated, k)
	}
	sort.Strings(f.activated)
}
func (f *fakeFramework) GetWaitingPod(types.UID) fwk.WaitingPod { return nil }
func (f *fakeFramework) EventRecorder() events.EventRecorderLogger {
	return &fakeRecorder{f: f}
}

type fakeRecorder struct {
	events.EventRecorderLogger
	f *fakeFramework
}

func (r *fakeRecorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	ref := regarding.(*corev1.ObjectReference)
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.events = append(r.f.events, fmt.Sprintf("%s/%s %s: %s", ref.Kind, ref.Name, reason, fmt.Sprintf(note, args...)))
}

func newTestState(settings ...func(*Settings)) (*State, *testingclock.FakeClock) {
	s := DefaultSettings()
	s.SchedulerName = builder.SchedulerName
	for _, f := range settings {
		f(&s)
	}
	clk := testingclock.NewFakeClock(t0)
	return NewWithClock(s, clk), clk
}

func podGroup(name string, minMember int32, labels map[string]string) *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pg-" + name), Labels: labels, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: minMember},
	}
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

// TestSemiPreemptibleRoles: a semi-preemptible gang's min members, by rank
// (oldest placed first), are charged non-preemptible and the rest elastic
// and preemptible, whatever order they were placed in; a state rebuilt
// from the API alone (a restart) charges them the same; and roles follow
// members leaving and minMember changing (SPEC §1.2, §3.1, §3.5, §5.2).
func TestSemiPreemptibleRoles(t *testing.T) {
	s, _ := newTestState()
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	pods := []*corev1.Pod{member("g", 0), member("g", 1), member("g", 2), member("g", 3)}
	for _, p := range pods {
		s.OnPod(p)
	}
	steps := []struct {
		place int
		want  [3]int64
	}{
		{3, [3]int64{1, 1, 0}}, // below min: a min member
		{2, [3]int64{2, 2, 0}},
		{0, [3]int64{3, 2, 1}}, // ranks before 3, which turns elastic
		{1, [3]int64{4, 2, 2}}, // ranks before 2, which turns elastic
	}
	for _, st := range steps {
		if status := s.Reserve(pods[st.place], "n"); status != nil {
			t.Fatal(status)
		}
		if got := roles(s); got != st.want {
			t.Errorf("after placing pod %d: allocated, non-preemptible, elastic = %v, want %v", st.place, got, st.want)
		}
	}

	// A restart: the same pods as the API shows them, in another order.
	rebuilt, _ := newTestState()
	rebuilt.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	rebuilt.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	for _, i := range rand.New(rand.NewSource(1)).Perm(len(pods)) {
		rebuilt.OnPod(bound(pods[i], "n"))
	}
	rebuilt.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	if got, want := roles(rebuilt), roles(s); got != want {
		t.Errorf("after a restart: %v, before it: %v", got, want)
	}

	s.OnPodGone(pods[0]) // a min member leaves: the oldest elastic pod takes its place
	if got, want := roles(s), [3]int64{3, 2, 1}; got != want {
		t.Errorf("after a min member left: %v, want %v", got, want)
	}
	s.OnPodGroup(podGroup("g", 3, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	if got, want := roles(s), [3]int64{3, 3, 0}; got != want {
		t.Errorf("after minMember rose to 3: %v, want %v", got, want)
	}
}

// TestCandidate: what PreFilter judges a pod by is what Reserve charges.
func TestCandidate(t *testing.T) {
	s, _ := newTestState()
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	pods := []*corev1.Pod{member("g", 0), member("g", 1), member("g", 2)}
	for _, p := range pods {
		s.OnPod(p)
	}
	if c := s.Candidate(pods[2]); !c.NonPreemptible || c.Displaced != nil {
		t.Errorf("first pod of a semi-preemptible gang: %+v, want non-preemptible", c)
	}
	s.Reserve(pods[1], "n")
	s.Reserve(pods[2], "n")
	c := s.Candidate(pods[0])
	if !c.NonPreemptible || c.Displaced == nil || c.Displaced.Cards[h200] != 1 {
		t.Errorf("an older pod of a gang at min: %+v, want non-preemptible, displacing one card's min member", c)
	}
	s.Reserve(pods[0], "n")
	if got := roles(s); got[1] != 2 {
		t.Errorf("after Reserve, non-preemptible = %d, want 2 as Candidate said", got[1])
	}
	if c := s.Candidate(member("g", 3)); c.NonPreemptible {
		t.Errorf("a younger pod of a gang at min: %+v, want elastic (preemptible)", c)
	}
}

// lockingFramework takes the scheduling queue's lock to activate pods, as
// kube-scheduler's PriorityQueue.Activate does.
type lockingFramework struct {
	fakeFramework
	queueLock *sync.Mutex
}

func (f *lockingFramework) Activate(logger klog.Logger, pods map[string]*corev1.Pod) {
	f.queueLock.Lock()
	defer f.queueLock.Unlock()
	f.fakeFramework.Activate(logger, pods)
}

// TestAdmissionNeverCallsTheFrameworkInline: PreEnqueue runs under the
// scheduling queue's lock, so holding a gang there (which frees elastic
// pods that waited for it) must not call back into the queue, or the whole
// scheduler stops; the wake-up happens afterwards, from the outbox.
func TestAdmissionNeverCallsTheFrameworkInline(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 0, 8).Obj())
	s.OnPodGroup(podGroup("a", 1, nil))
	s.OnPodGroup(podGroup("b", 2, nil))
	a := []*corev1.Pod{member("a", 0), member("a", 1)}
	b := []*corev1.Pod{member("b", 0), member("b", 1)}
	for _, p := range append(a, b...) {
		s.OnPod(p)
	}
	s.Flush(&fakeFramework{}) // the gangs' pods woken as they became admissible
	s.Reserve(a[0], "n")
	if _, st := s.TryStart(a[1]); st.Code() != fwk.Unschedulable {
		t.Fatalf("elastic pod while b needs its min: %v, want parked", st)
	}

	queueLock := &sync.Mutex{}
	fw := &lockingFramework{queueLock: queueLock}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.out.run(ctx, fw)
	queueLock.Lock() // kube-scheduler holds it while it runs PreEnqueue
	done := make(chan struct{})
	go func() {
		s.Hold(b[0], "ns/b", "CardinalQueue", "held by its queue", "q", false)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("holding a gang from PreEnqueue blocked on the scheduling queue's lock")
	}
	queueLock.Unlock()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		return cmp.Equal(fw.activated, []string{"ns/a-1"}), nil
	})
	if err != nil {
		t.Errorf("the elastic pod freed by the hold was not woken afterwards: %v", fw.activated)
	}
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
	s.OnPodGone(gpu)
	s.Unreserve(plain)
	u = s.Usage("q")
	if len(u.Allocated) != 0 || u.Cards[h200].Allocated != 0 {
		t.Errorf("after the pods left: allocated %v, H200 %d; want nothing", u.Allocated, u.Cards[h200].Allocated)
	}
}

// TestSplitGangs: a gang whose pods resolve to different queues, or name
// another scheduler, is held with an event on its PodGroup, once per
// reason, and admitted once the split is mended.
func TestSplitGangs(t *testing.T) {
	s, _ := newTestState()
	s.OnPodGroup(podGroup("g", 2, nil))
	p0, p1 := member("g", 0), member("g", 1)
	p1.Labels[v1alpha1.QueueLabel] = "other"
	s.OnPod(p0)
	s.OnPod(p1)
	st := s.AdmitGang(p0)
	if want := "gang ns/g's pods resolve to different queues: other (1 pods), q (1 pods); set the label cardinal.dev/queue on the PodGroup"; !strings.HasPrefix(st.Message(), want) {
		t.Errorf("split across queues: %q, want %q...", st.Message(), want)
	}
	s.AdmitGang(p1)
	fw := &fakeFramework{}
	s.Flush(fw)
	if len(fw.events) != 1 || !strings.Contains(fw.events[0], "PodGroup/g GangSplit") {
		t.Errorf("events %v, want one GangSplit on the PodGroup", fw.events)
	}
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.QueueLabel: "q"}))
	if st := s.AdmitGang(p0); st != nil {
		t.Errorf("with the queue on the PodGroup: %v, want admitted", st)
	}
	if g := s.gangs["ns/g"]; len(g.held) > 0 {
		t.Errorf("still held: %v", g.held)
	}

	foreign := member("g", 2)
	foreign.Spec.SchedulerName = "default-scheduler"
	s.OnPod(foreign)
	if st := s.AdmitGang(p0); !strings.Contains(st.Message(), "g-2 (default-scheduler)") {
		t.Errorf("split across schedulers: %q, want it to name g-2 and its scheduler", st.Message())
	}
	relabelled := foreign.DeepCopy()
	delete(relabelled.Labels, schedv1alpha1.PodGroupLabel)
	s.OnPod(relabelled)
	if st := s.AdmitGang(p0); st != nil {
		t.Errorf("after the foreign pod was relabelled out of the gang: %v, want admitted", st)
	}
	s.OnPod(foreign)
	s.OnPodGone(foreign)
	if st := s.AdmitGang(p0); st != nil {
		t.Errorf("after the foreign pod left: %v, want admitted", st)
	}
}

// TestDeferredUntilSynced: gang admission before the state has its initial
// lists turns pods away without waiting (it runs under the scheduling
// queue's lock) and wakes them once the state has synced.
func TestDeferredUntilSynced(t *testing.T) {
	s, clk := newTestState()
	synced := false
	s.sources = []func() bool{func() bool { return synced }}
	s.OnPodGroup(podGroup("g", 1, nil))
	p := member("g", 0)
	if st := s.AdmitGang(p); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("before sync: %v, want turned away", st)
	}
	fw := &fakeFramework{}
	s.tick()
	s.Flush(fw)
	if len(fw.activated) != 0 {
		t.Fatalf("woken before sync: %v", fw.activated)
	}
	synced = true
	clk.Step(tickEvery)
	s.tick()
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/g-0"}, fw.activated); diff != "" {
		t.Errorf("woken after sync (-want, +got):\n%s", diff)
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

// TestPodGroupUpdatesWakeNobody: a PodGroup update (Cardinal's own status
// writes among them) wakes none of its pods; the queueing hints requeue
// them when the change can admit them (pkg/requeue).
func TestPodGroupUpdatesWakeNobody(t *testing.T) {
	s, _ := newTestState()
	pg := podGroup("g", 3, nil)
	s.OnPodGroup(pg)
	for i := range 3 {
		s.OnPod(member("g", i))
	}
	s.Flush(&fakeFramework{}) // the gang's pods woken as it reached minMember
	written := pg.DeepCopy()
	written.Status.Phase = schedv1alpha1.PodGroupPending
	written.Annotations = map[string]string{"cardinal.dev/waiting-reason": "0 of minMember 3 pods scheduled"}
	s.OnPodGroup(written)
	fw := &fakeFramework{}
	s.Flush(fw)
	if len(fw.activated) != 0 {
		t.Errorf("a PodGroup update woke %v", fw.activated)
	}
}

// TestWaitersWokenWhenTheStateHasTheChange: a pod turned away for room in
// its queue is woken when the state applies the change that can let it in
// (a placed pod of the queue gone, the Queue raised, a node's card models
// changed), not by Cardinal's own status writes: a queueing hint may have
// fired before the state had the change and judged the pod on old numbers.
func TestWaitersWokenWhenTheStateHasTheChange(t *testing.T) {
	s, _ := newTestState()
	q := builder.MakeQueue("q").Card(h200, 1, 1).Obj()
	q.Generation = 1
	s.OnQueue(q)
	s.OnNode(builder.MakeNode("n").GPU(h200, 4).Obj())
	running := bound(member("r", 0), "n")
	delete(running.Labels, schedv1alpha1.PodGroupLabel)
	s.OnPod(running)
	waiting := builder.MakePod("ns", "w").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	waiting.UID = "w"
	s.OnPod(waiting)
	wokenBy := func(change func()) []string {
		s.Flush(&fakeFramework{})
		s.WaitForRoom(waiting, "q", true)
		change()
		fw := &fakeFramework{}
		s.Flush(fw)
		return fw.activated
	}
	written := q.DeepCopy()
	written.Status.AllocatedSummary = "nvidia.com/gpu=1"
	if got := wokenBy(func() { s.OnQueue(written) }); len(got) != 0 {
		t.Errorf("a status write woke %v", got)
	}
	raised := q.DeepCopy()
	raised.Generation = 2
	raised.Spec.Cards[0].Capability = ptrTo[int32](2)
	if got := wokenBy(func() { s.OnQueue(raised) }); !cmp.Equal(got, []string{"ns/w"}) {
		t.Errorf("the Queue raised woke %v, want ns/w", got)
	}
	if got := wokenBy(func() { s.OnNode(builder.MakeNode("m").GPU("NVIDIA-B200", 4).Obj()) }); !cmp.Equal(got, []string{"ns/w"}) {
		t.Errorf("a node with new card models woke %v, want ns/w", got)
	}
	if got := wokenBy(func() { s.OnPodGone(running) }); !cmp.Equal(got, []string{"ns/w"}) {
		t.Errorf("a placed pod of the queue gone woke %v, want ns/w", got)
	}
	s.Reserve(waiting, "n")
	if got := wokenBy(func() {}); len(got) != 0 {
		t.Errorf("nothing changed, woke %v", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestOwnerLabelReclassifies: a pod seen before its ReplicaSet and
// Deployment (as after a restart) is classified by the Deployment's
// preemptibility label once they arrive, and again when it changes, so its
// charge does not depend on the order informers deliver (SPEC §5.1).
func TestOwnerLabelReclassifies(t *testing.T) {
	s, _ := newTestState()
	rsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	depIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.kube.owners = workload.Owners{ReplicaSets: appslisters.NewReplicaSetLister(rsIndexer), Deployments: appslisters.NewDeploymentLister(depIndexer)}
	h := s.ownerHandler()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "dep",
		Labels: map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "dep", Controller: ptrTo(true)}}}}
	pod := builder.MakePod("ns", "web-1-a").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	pod.UID = "pod"
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: ptrTo(true)}}
	s.OnPod(bound(pod, "n"))
	if got := s.Cards("q")[h200].NonPreemptible; got != 0 {
		t.Fatalf("before its owners arrived (priority 0): non-preemptible %d, want 0", got)
	}
	_ = rsIndexer.Add(rs)
	h.OnAdd(rs, false)
	_ = depIndexer.Add(dep)
	h.OnAdd(dep, false)
	if got := s.Cards("q")[h200].NonPreemptible; got != 1 {
		t.Errorf("after its Deployment arrived: non-preemptible %d, want 1", got)
	}
	relabelled := dep.DeepCopy()
	relabelled.Labels[v1alpha1.PreemptibilityLabel] = v1alpha1.Preemptible
	_ = depIndexer.Update(relabelled)
	h.OnUpdate(dep, relabelled)
	if got := s.Cards("q")[h200].NonPreemptible; got != 0 {
		t.Errorf("after its Deployment was relabelled preemptible: non-preemptible %d, want 0", got)
	}
}

// TestDeletedPodLeavesNoGhost: a pod whose delete the state has already
// applied, reaching PreFilter or Reserve again (the scheduler's informer
// handler runs apart from the state's), is judged but not recorded again:
// it would otherwise count for its gang and queue for ever.
func TestDeletedPodLeavesNoGhost(t *testing.T) {
	s, _ := newTestState()
	podIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.kube.pods = corelisters.NewPodLister(podIndexer)
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnPodGroup(podGroup("g", 1, nil))
	p := member("g", 0)
	_ = podIndexer.Add(p)
	s.OnPod(p)
	_ = podIndexer.Delete(p)
	s.OnPodGone(p)
	if _, st := s.TryStart(p); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter of a deleted pod: %v, want refused", st)
	}
	if st := s.Reserve(p, "n"); st.IsSuccess() {
		t.Error("a deleted pod was reserved")
	}
	s.Candidate(p)
	if _, ok := s.pods[p.UID]; ok {
		t.Error("the deleted pod is recorded again")
	}
	if u := s.Usage("q"); len(u.Pending) != 0 || len(u.Allocated) != 0 {
		t.Errorf("queue counts a deleted pod: pending %v, allocated %v", u.Pending, u.Allocated)
	}
}
