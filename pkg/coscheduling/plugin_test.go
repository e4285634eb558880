package coscheduling

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
	"cardinal.dev/cardinal/test/statetest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	nodes []fwk.NodeInfo
	clock *testingclock.FakeClock
	h     *fake.Framework
	st    *state.State
	p     *Plugin
}

func newFixture(t *testing.T) *fixture {
	st, clk := statetest.WithClock()
	h := &fake.Framework{}
	st.SetPermitPlugin(Name)
	p := &Plugin{handle: h, state: st, permitWait: 60 * time.Second, binds: make(chan struct{}, bindSlots)}
	ni := framework.NewNodeInfo()
	ni.SetNode(builder.MakeNode("node").GPU("NVIDIA-H200", 8).Obj())
	return &fixture{t: t, clock: clk, h: h, st: st, p: p, nodes: []fwk.NodeInfo{ni}}
}

// flush does what the state queued for the framework (wake-ups, Permit
// allows and rejects, events), as its goroutine would.
func (f *fixture) flush() { f.st.Flush(f.h) }

func (f *fixture) podGroup(name string, minMember int32, created time.Time) *schedv1alpha1.PodGroup {
	pg := builder.MakePodGroup("ns", name, minMember).UID("pg-" + name).Created(created).Obj()
	f.st.OnPodGroup(pg)
	f.flush()
	return pg
}

// gang adds a PodGroup and n pods of it, and returns the pods.
func (f *fixture) gang(name string, minMember int32, n int, created time.Time) []*corev1.Pod {
	f.podGroup(name, minMember, created)
	var pods []*corev1.Pod
	for i := range n {
		pod := builder.MakePod("ns", fmt.Sprintf("%s-%d", name, i)).Label(PodGroupLabel, name).Obj()
		pod.UID = types.UID(pod.Name)
		pod.CreationTimestamp = metav1.NewTime(created)
		f.st.OnPod(pod)
		pods = append(pods, pod)
	}
	f.flush()
	f.h.TakeActivated() // its pods were woken as it reached minMember
	return pods
}

// schedule runs a pod through PreFilter, Reserve and Permit as the framework
// would for a pod that fits, and returns Permit's code (or PreFilter's on failure).
func (f *fixture) schedule(pod *corev1.Pod) (fwk.Code, fwk.CycleState) {
	ctx := context.Background()
	cs := framework.NewCycleState()
	defer f.flush()
	if _, s := f.p.PreFilter(ctx, cs, pod, f.nodes); !s.IsSuccess() {
		return s.Code(), cs
	}
	if s := f.p.Reserve(ctx, cs, pod, "node"); !s.IsSuccess() {
		f.p.Unreserve(ctx, cs, pod, "node")
		return s.Code(), cs
	}
	s, timeout := f.p.Permit(ctx, cs, pod, "node")
	if s.Code() == fwk.Wait {
		if timeout != 60*time.Second {
			f.t.Errorf("Permit timeout %v, want the configured 60s", timeout)
		}
		f.h.Wait(pod)
	}
	return s.Code(), cs
}

func TestPreEnqueue(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("train", 3, 2, t0)
	orphan := builder.MakePod("ns", "orphan").Label(PodGroupLabel, "missing").Obj()
	tests := []struct {
		name    string
		pod     *corev1.Pod
		wantMsg string
	}{
		{"pod without a gang", builder.MakePod("ns", "single").Obj(), ""},
		{"PodGroup missing", orphan, "PodGroup ns/missing not found: create it, or remove the label scheduling.x-k8s.io/pod-group from the pod"},
		{"fewer than min pods", pods[0], "gang ns/train has 2 of its minMember 3 pods; waiting for 1 more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := f.p.PreEnqueue(context.Background(), tc.pod)
			if got := s.Message(); got != tc.wantMsg {
				t.Errorf("PreEnqueue message %q, want %q", got, tc.wantMsg)
			}
		})
	}
	// The third pod completes the gang: its pods are woken, once, and admitted.
	third := builder.MakePod("ns", "train-2").Label(PodGroupLabel, "train").Obj()
	third.UID = "train-2"
	f.st.OnPod(third)
	f.flush()
	if diff := cmp.Diff([]string{"ns/train-0", "ns/train-1", "ns/train-2"}, f.h.TakeActivated()); diff != "" {
		t.Errorf("activated (-want, +got):\n%s", diff)
	}
	if s := f.p.PreEnqueue(context.Background(), pods[0]); !s.IsSuccess() {
		t.Errorf("PreEnqueue with min pods: %v", s)
	}
	fourth := builder.MakePod("ns", "train-3").Label(PodGroupLabel, "train").Obj()
	fourth.UID = "train-3"
	f.st.OnPod(fourth)
	f.flush()
	if got := f.h.TakeActivated(); len(got) != 0 {
		t.Errorf("a member beyond min woke %v; only reaching min wakes the gang", got)
	}
}

func TestPermitWaitsForMinThenAllowsAll(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("train", 3, 4, t0)
	for i, want := range []fwk.Code{fwk.Wait, fwk.Wait, fwk.Success, fwk.Success} {
		if got, _ := f.schedule(pods[i]); got != want {
			t.Fatalf("pod %d: Permit %v, want %v", i, got, want)
		}
	}
	for i := range 2 {
		if !f.h.WaitingPod(pods[i]).Allowed() {
			t.Errorf("pod %d waiting at Permit was not allowed when min was reached", i)
		}
	}
}

func TestPermitTimeoutReleasesTheGang(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("train", 3, 3, t0)
	_, cs0 := f.schedule(pods[0])
	f.schedule(pods[1])

	// The framework rejects pods[0] when its Permit wait times out, then unreserves it.
	f.p.Unreserve(context.Background(), cs0, pods[0], "node")
	f.flush()
	if wp := f.h.WaitingPod(pods[1]); wp.Rejected() == "" {
		t.Error("the sibling waiting at Permit was not rejected: it would keep its node")
	}
	if v, _ := f.st.GangStatus("ns/train"); v.Placed != 1 {
		t.Errorf("placed = %d after one unreserve, want 1 (the rejected sibling unreserves itself)", v.Placed)
	}
	if len(f.h.Events()) != 1 {
		t.Errorf("want one GangUnschedulable event, got %v", f.h.Events())
	}

	// During backoff no member is tried.
	if code, _ := f.schedule(pods[2]); code != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter during backoff: %v, want UnschedulableAndUnresolvable", code)
	}
	f.clock.Step(9 * time.Second)
	f.flush()
	if got := f.h.TakeActivated(); len(got) != 0 {
		t.Errorf("pods woken before the backoff ended: %v", got)
	}
	f.clock.Step(2 * time.Second)
	f.flush()
	if got := f.h.TakeActivated(); len(got) == 0 {
		t.Error("the gang's pods were not woken when its backoff ended")
	}
	if code, _ := f.schedule(pods[2]); code == fwk.UnschedulableAndUnresolvable {
		t.Error("PreFilter still refuses after the backoff")
	}
}

func TestPostFilterRejectsWaitingMembersAndElasticNeverPreempts(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("train", 2, 4, t0)
	f.schedule(pods[0])

	cs := framework.NewCycleState()
	if _, s := f.p.PreFilter(context.Background(), cs, pods[1], f.nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	_, s := f.p.PostFilter(context.Background(), cs, pods[1], nil)
	f.flush()
	if s.Code() != fwk.Unschedulable {
		t.Errorf("PostFilter of a min member: %v", s)
	}
	if f.h.WaitingPod(pods[0]).Rejected() == "" {
		t.Error("PostFilter did not make the waiting member give back its node")
	}

	// A gang at min: its next pod is elastic and must never preempt.
	g := newFixture(t)
	gp := g.gang("el", 1, 2, t0)
	g.schedule(gp[0])
	g.st.OnPod(bound(gp[0]))
	cs = framework.NewCycleState()
	if _, s := g.p.PreFilter(context.Background(), cs, gp[1], g.nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	if _, s := g.p.PostFilter(context.Background(), cs, gp[1], nil); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PostFilter of an elastic pod: %v, want UnschedulableAndUnresolvable (no preemption)", s)
	}
}

// TestPostFilterAfterNarrowingMiss: a min member that fit none of the
// nodes its cycle was narrowed to fails nothing in CardinalGang's
// PostFilter: its waiting sibling keeps its node, the gang does not back
// off (neither at once, without CardinalPreemption in the profile, nor
// deferred to it, with), and the member is woken to be tried on every node.
func TestPostFilterAfterNarrowingMiss(t *testing.T) {
	for _, preemption := range []bool{false, true} {
		t.Run(fmt.Sprintf("preemption %v", preemption), func(t *testing.T) {
			f := newFixture(t)
			if preemption {
				f.st.EnablePreemption()
			}
			pods := f.gang("train", 2, 2, t0)
			if code, _ := f.schedule(pods[0]); code != fwk.Wait {
				t.Fatalf("first member: %v, want Wait", code)
			}
			cs := framework.NewCycleState()
			if _, s := f.p.PreFilter(context.Background(), cs, pods[1], f.nodes); !s.IsSuccess() {
				t.Fatal(s)
			}
			state.MarkNarrowed(cs, "NVIDIA-H200", 1)
			statuses := framework.NewDefaultNodeToStatus()
			statuses.Set("node", fwk.NewStatus(fwk.Unschedulable, "node(s) didn't have free ports for the requested pod ports"))
			_, s := f.p.PostFilter(context.Background(), cs, pods[1], statuses)
			f.flush()
			if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "tried again on every node") {
				t.Errorf("PostFilter: %v, want UnschedulableAndUnresolvable saying it is tried on every node", s)
			}
			if r := f.h.WaitingPod(pods[0]).Rejected(); r != "" {
				t.Errorf("the waiting member gave back its node: %s", r)
			}
			if diff := cmp.Diff([]string{"ns/train-1"}, f.h.TakeActivated()); diff != "" {
				t.Errorf("woken (-want +got):\n%s", diff)
			}
			if code, _ := f.schedule(pods[1]); code != fwk.Success {
				t.Errorf("the member tried again: %v, want it placed and its gang let through", code)
			}
		})
	}
}

func TestOneGangAssembledAtATime(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 2, 2, t0)
	b := f.gang("b", 2, 2, t0.Add(time.Second))
	f.schedule(a[0])
	if code, _ := f.schedule(b[0]); code != fwk.Unschedulable {
		t.Fatalf("a min member of b was tried while a was being placed: %v", code)
	}
	if code, _ := f.schedule(a[1]); code != fwk.Success {
		t.Fatalf("a's last min member: %v", code)
	}
	if diff := cmp.Diff([]string{"ns/b-0"}, f.h.TakeActivated()); diff != "" {
		t.Errorf("woken when a completed (-want, +got):\n%s", diff)
	}
	if code, _ := f.schedule(b[0]); code != fwk.Wait {
		t.Errorf("b after a completed: %v, want Wait", code)
	}
}

func TestElasticWaitsForOtherGangsMin(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 1, 3, t0)
	b := f.gang("b", 2, 2, t0.Add(time.Second))
	f.schedule(a[0]) // a reaches its min of 1
	if code, _ := f.schedule(a[1]); code != fwk.Unschedulable {
		t.Fatalf("a's elastic pod was tried while b still needs its min: %v", code)
	}
	f.schedule(b[0])
	f.schedule(b[1])
	if diff := cmp.Diff([]string{"ns/a-1"}, f.h.TakeActivated()); diff != "" {
		t.Errorf("woken when b reached min (-want, +got):\n%s", diff)
	}
	if code, _ := f.schedule(a[1]); code != fwk.Success {
		t.Errorf("a's elastic pod once every min is placed: %v", code)
	}
}

func TestHeldGangDoesNotHoldBackElasticPods(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 1, 2, t0)
	held := f.gang("held", 2, 2, t0.Add(time.Second))
	f.st.Hold(held[0], "ns/held", state.QuotaAdmission{Holder: "test"}, builder.Because("held by its queue"))
	f.flush()
	f.schedule(a[0])
	if code, _ := f.schedule(a[1]); code != fwk.Success {
		t.Errorf("elastic pod behind a gang held by its queue: %v, want Success", code)
	}
}

func TestLess(t *testing.T) {
	f := newFixture(t)
	old := f.gang("old", 2, 2, t0)
	young := f.gang("young", 2, 2, t0.Add(time.Minute))
	single := builder.MakePod("ns", "single").Obj()
	single.CreationTimestamp = metav1.NewTime(t0.Add(30 * time.Second))
	twin := builder.MakePod("ns", "twin").Obj() // as old as single
	twin.CreationTimestamp = single.CreationTimestamp
	sameAge := f.gang("same-age", 2, 2, t0.Add(30*time.Second))
	// Two gangs whose PodGroups were made in the same second: the one
	// admitted first (here "zz", whose pods came first) goes first,
	// whatever their names.
	f.clock.Step(time.Second)
	admittedFirst := f.gang("zz", 2, 2, t0.Add(2*time.Minute))
	f.clock.Step(time.Second)
	admittedLater := f.gang("aa", 2, 2, t0.Add(2*time.Minute))
	entity := func(p *corev1.Pod, prio int32) fwk.QueuedEntityInfo {
		p = p.DeepCopy()
		p.Spec.Priority = &prio
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		return &framework.QueuedPodInfo{PodInfo: pi}
	}
	tests := []struct {
		name string
		a, b fwk.QueuedEntityInfo
		want bool
	}{
		{"higher priority first", entity(young[0], 10), entity(old[0], 0), true},
		{"older gang first", entity(old[1], 0), entity(young[0], 0), true},
		{"single pod by its own age", entity(single, 0), entity(young[0], 0), true},
		{"single pod after an older gang", entity(single, 0), entity(old[0], 0), false},
		{"within a gang by rank", entity(old[0], 0), entity(old[1], 0), true},
		{"within a gang by rank, reversed", entity(old[1], 0), entity(old[0], 0), false},
		{"a gang before a single pod as old", entity(sameAge[1], 0), entity(single, 0), true},
		{"a single pod after a gang as old", entity(single, 0), entity(sameAge[0], 0), false},
		{"single pods as old by name", entity(single, 0), entity(twin, 0), true},
		{"single pods as old by name, reversed", entity(twin, 0), entity(single, 0), false},
		{"a pod is not before itself", entity(single, 0), entity(single, 0), false},
		{"of gangs made in the same second, the one admitted first", entity(admittedFirst[1], 0), entity(admittedLater[0], 0), true},
		{"of gangs made in the same second, the one admitted later after", entity(admittedLater[0], 0), entity(admittedFirst[1], 0), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.p.Less(tc.a, tc.b); got != tc.want {
				t.Errorf("Less = %v, want %v", got, tc.want)
			}
		})
	}
	// Less runs under the scheduling queue's lock, log n times per pod.
	a, b := entity(single, 0), entity(twin, 0)
	if n := testing.AllocsPerRun(100, func() { f.p.Less(a, b) }); n != 0 {
		t.Errorf("Less of two single pods allocates %v times, want 0", n)
	}
}

func bound(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = "node"
	return p
}

// TestGangThatCannotFitReservesNothing: a gang whose missing min does not
// fit the free resources reserves nothing: PreFilter refuses its pod, and
// PostFilter (when preemption found no room either) fails the gang.
func TestGangThatCannotFitReservesNothing(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("big", 3, 3, t0)
	for _, p := range pods {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{builder.GPUResource: resource.MustParse("4")}
	}
	// The node has 8 cards: room for 2 such pods, min is 3.
	cs := framework.NewCycleState()
	_, s := f.p.PreFilter(context.Background(), cs, pods[0], f.nodes)
	if want := "gang ns/big does not fit: its min needs 3 more pods placed and free resources hold at most 2 like them"; s.Code() != fwk.Unschedulable || s.Message() != want {
		t.Fatalf("PreFilter of a gang whose min cannot fit: %v, want Unschedulable %q", s, want)
	}
	if len(f.h.Events()) != 0 {
		t.Fatalf("PreFilter failed the gang before preemption had its chance: %v", f.h.Events())
	}
	f.p.PostFilter(context.Background(), cs, pods[0], nil)
	f.flush()
	if v, _ := f.st.GangStatus("ns/big"); v.Placed != 0 {
		t.Errorf("gang placed %d; want nothing placed", v.Placed)
	}
	if _, s := f.p.PreFilter(context.Background(), framework.NewCycleState(), pods[1], f.nodes); !strings.Contains(s.Message(), "backing off") {
		t.Errorf("PreFilter right after: %v, want the gang backing off", s)
	}
	want := []string{"Warning PodGroup/big GangUnschedulable: pod big-0 cannot be placed now (its events say why) with 0 of its min 3 placed; gave back 0 reserved pods, retrying in 10s"}
	if diff := cmp.Diff(want, f.h.Events()); diff != "" {
		t.Errorf("events (-want, +got):\n%s", diff)
	}
}

func TestRoomFor(t *testing.T) {
	node := func(gpus int, podsOn int) fwk.NodeInfo {
		ni := framework.NewNodeInfo()
		for i := range podsOn {
			ni.AddPod(builder.MakePod("ns", fmt.Sprintf("p%d", i)).GPU(1).Obj())
		}
		ni.SetNode(builder.MakeNode("n").GPU("NVIDIA-H200", gpus).Obj())
		return ni
	}
	twoGPU := shapeOf([]*corev1.Pod{builder.MakePod("ns", "a").GPU(2).Obj(), builder.MakePod("ns", "b").GPU(3).Obj()})
	tests := []struct {
		name  string
		nodes []fwk.NodeInfo
		need  int
		want  int
	}{
		{"fragments do not add up", []fwk.NodeInfo{node(1, 0), node(1, 0), node(1, 0)}, 1, 0},
		{"used cards are not free", []fwk.NodeInfo{node(8, 5)}, 4, 1},
		{"stops at need", []fwk.NodeInfo{node(8, 0), node(8, 0)}, 3, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := roomFor(twoGPU, tc.nodes, tc.need); got != tc.want {
				t.Errorf("roomFor = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPermitTimeoutFromPodGroup: a PodGroup's spec.scheduleTimeoutSeconds,
// when set, is how long its members wait at Permit, up to the plugin's
// permitWaitingTimeSeconds, which applies otherwise (SPEC §1.2).
func TestPermitTimeoutFromPodGroup(t *testing.T) {
	tests := []struct {
		name    string
		timeout *int32
		want    time.Duration
	}{
		{"unset", nil, 60 * time.Second},
		{"zero", ptr.To[int32](0), 60 * time.Second},
		{"set", ptr.To[int32](5), 5 * time.Second},
		{"longer than the plugin's: capped", ptr.To[int32](600), 60 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			pods := f.gang("train", 2, 2, t0)
			pg := f.podGroup("train", 2, t0).DeepCopy()
			pg.Spec.ScheduleTimeoutSeconds = tc.timeout
			f.st.OnPodGroup(pg)
			f.flush()
			ctx := context.Background()
			cs := framework.NewCycleState()
			if _, s := f.p.PreFilter(ctx, cs, pods[0], f.nodes); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			if s := f.p.Reserve(ctx, cs, pods[0], "node"); !s.IsSuccess() {
				t.Fatalf("Reserve: %v", s)
			}
			s, timeout := f.p.Permit(ctx, cs, pods[0], "node")
			if s.Code() != fwk.Wait || timeout != tc.want {
				t.Errorf("Permit = %v, %v; want Wait for %v", s.Code(), timeout, tc.want)
			}
		})
	}
}
