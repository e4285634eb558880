package coscheduling

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
)

// TestReserveAfterTheGangGaveUp: a member whose PreFilter ran before its
// gang gave up its attempt, and whose Reserve runs after, is refused: it
// would otherwise wait alone at Permit, keep its gang "being placed" and
// park every other gang until its Permit wait ran out.
func TestReserveAfterTheGangGaveUp(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 2, 3, t0)
	b := f.gang("b", 2, 2, t0.Add(time.Second))
	ctx := context.Background()
	_, cs0 := f.schedule(a[0])

	cs1 := framework.NewCycleState()
	if _, s := f.p.PreFilter(ctx, cs1, a[1], f.nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	// Meanwhile a[0]'s Permit wait runs out: the attempt fails.
	f.p.Unreserve(ctx, cs0, a[0], "node")
	f.flush()

	if s := f.p.Reserve(ctx, cs1, a[1], "node"); s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), "gave up the attempt") {
		t.Fatalf("Reserve of a member of a failed attempt: %v, want Unschedulable naming the failed attempt", s)
	}
	f.p.Unreserve(ctx, cs1, a[1], "node")
	f.flush()
	if v, _ := f.st.GangStatus("ns/a"); v.Placed != 0 {
		t.Errorf("gang a has %d placed, want none", v.Placed)
	}
	if code, _ := f.schedule(b[0]); code != fwk.Wait {
		t.Errorf("another gang's min member: %v, want Wait (tried, not parked behind a)", code)
	}
}

// TestLoweredMinMemberAllowsWaitingMembers: members waiting at Permit bind
// as soon as a lowered minMember is met.
func TestLoweredMinMemberAllowsWaitingMembers(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("a", 3, 3, t0)
	f.schedule(pods[0])
	f.schedule(pods[1])
	if f.h.WaitingPod(pods[0]).Allowed() {
		t.Fatal("allowed below min")
	}
	f.podGroup("a", 2, t0)
	for i := range 2 {
		if wp := f.h.WaitingPod(pods[i]); !wp.Allowed() || wp.Rejected() != "" {
			t.Errorf("pod %d after minMember was lowered to 2: allowed %v, rejected %q", i, wp.Allowed(), wp.Rejected())
		}
	}
}

// TestMembersGoneBelowMin: a gang that loses members below its min while
// others wait at Permit makes them give back their nodes at once, without
// a backoff (it waits for members, not for time), and its other pods are
// not tried until it has min members again.
func TestMembersGoneBelowMin(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("a", 3, 3, t0)
	f.schedule(pods[0])
	f.schedule(pods[1])
	f.st.OnPodDeleted(pods[2])
	f.flush()
	for i := range 2 {
		if f.h.WaitingPod(pods[i]).Rejected() == "" {
			t.Errorf("waiting pod %d was not rejected when its gang fell below min", i)
		}
	}
	if len(f.h.Events()) != 0 {
		t.Errorf("events %v: a gang that lost members did not fail, it waits for members", f.h.Events())
	}
	f.p.Unreserve(context.Background(), nil, pods[0], "node")
	f.p.Unreserve(context.Background(), nil, pods[1], "node")
	_, s := f.p.PreFilter(context.Background(), framework.NewCycleState(), pods[0], f.nodes)
	if want := "gang ns/a has 2 of its minMember 3 pods; waiting for 1 more"; s.Message() != want {
		t.Errorf("PreFilter: %q, want %q", s.Message(), want)
	}
}

// TestPodGroupGoneMidAssembly: members waiting at Permit when their
// PodGroup is deleted give back their nodes; none binds alone.
func TestPodGroupGoneMidAssembly(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("a", 3, 3, t0)
	f.schedule(pods[0])
	pg := f.podGroup("a", 3, t0)
	f.st.OnPodGroupGone(pg)
	f.flush()
	if wp := f.h.WaitingPod(pods[0]); wp.Rejected() == "" || wp.Allowed() {
		t.Errorf("waiting member after its PodGroup was deleted: allowed %v, rejected %q", wp.Allowed(), wp.Rejected())
	}
	if s := f.p.Reserve(context.Background(), nil, pods[1], "node"); s.IsSuccess() {
		t.Error("a member of a gang without its PodGroup was reserved: it could bind alone")
	}
}

// TestCompletionWakesOnlyTheNextGang: when the gang being placed
// completes, only the parked gang that comes next in queue order is woken,
// not every parked pod (which would only be parked again); the next one is
// woken when that one is done.
func TestCompletionWakesOnlyTheNextGang(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 2, 2, t0)
	b := f.gang("b", 2, 2, t0.Add(time.Second))
	c := f.gang("c", 2, 2, t0.Add(2*time.Second))
	f.schedule(a[0])
	for _, p := range []*corev1.Pod{c[0], b[0], c[1], b[1]} {
		if code, _ := f.schedule(p); code != fwk.Unschedulable {
			t.Fatalf("%s while a is being placed: %v, want parked", p.Name, code)
		}
	}
	f.schedule(a[1])
	if diff := cmp.Diff([]string{"ns/b-0", "ns/b-1"}, f.h.TakeActivated()); diff != "" {
		t.Errorf("woken when a completed (-want, +got):\n%s", diff)
	}
	f.schedule(b[0])
	f.schedule(b[1])
	if diff := cmp.Diff([]string{"ns/c-0", "ns/c-1"}, f.h.TakeActivated()); diff != "" {
		t.Errorf("woken when b completed (-want, +got):\n%s", diff)
	}
}

// TestHeldGangWakesTheNextOne: a parked gang woken next that its queue then
// holds back cannot start; the gang after it is woken, so nobody stays
// parked behind a gang that will not be placed.
func TestHeldGangWakesTheNextOne(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 2, 2, t0)
	b := f.gang("b", 2, 2, t0.Add(time.Second))
	c := f.gang("c", 2, 2, t0.Add(2*time.Second))
	f.schedule(a[0])
	f.schedule(b[0])
	f.schedule(c[0])
	f.st.Hold(b[1], "ns/b", state.QuotaAdmission{Holder: "test"}, builder.Because("held by its queue"))
	f.flush()
	f.h.TakeActivated()
	f.schedule(a[1])
	// b's pod is woken to wait where held pods wait (PreEnqueue), and c's to be placed.
	if diff := cmp.Diff([]string{"ns/b-0", "ns/c-0"}, f.h.TakeActivated()); diff != "" {
		t.Errorf("woken when a completed with b held (-want, +got):\n%s", diff)
	}
}

// TestParkedPodDoesNotFailItsGang: a pod this plugin's PreFilter parked
// reaches PostFilter like any pod that fits nowhere; that must not fail
// its gang (a backoff would delay it long after the gang ahead is placed).
func TestParkedPodDoesNotFailItsGang(t *testing.T) {
	f := newFixture(t)
	a := f.gang("a", 2, 2, t0)
	b := f.gang("b", 2, 2, t0.Add(time.Second))
	f.schedule(a[0])
	cs := framework.NewCycleState()
	if _, s := f.p.PreFilter(context.Background(), cs, b[0], f.nodes); s.Code() != fwk.Unschedulable {
		t.Fatalf("b's pod while a is being placed: %v, want parked", s)
	}
	f.p.PostFilter(context.Background(), cs, b[0], nil)
	f.flush()
	f.schedule(a[1])
	if code, _ := f.schedule(b[0]); code != fwk.Wait {
		t.Errorf("b's pod after a was placed: %v, want tried (Wait), not backing off", code)
	}
	if len(f.h.Events()) != 0 {
		t.Errorf("events %v: no gang failed", f.h.Events())
	}
}
