package coscheduling

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/test/builder"
)

// placedGang schedules a whole gang of n through Permit and returns its
// pods with their cycle states.
func (f *fixture) placedGang(name string, n int) ([]*corev1.Pod, []fwk.CycleState) {
	pods := f.gang(name, int32(n), n, t0)
	states := make([]fwk.CycleState, n)
	for i, pod := range pods {
		var code fwk.Code
		code, states[i] = f.schedule(pod)
		if want := fwk.Wait; i == n-1 {
			want = fwk.Success
			if code != want {
				f.t.Fatalf("Permit of the last member: %v, want %v", code, want)
			}
		} else if code != want {
			f.t.Fatalf("Permit of member %d: %v, want %v", i, code, want)
		}
	}
	return pods, states
}

func TestBindSlots(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pods, states := f.placedGang("big", bindSlots+2)
	plain := builder.MakePod("ns", "plain").Obj()

	if _, s := f.p.PreBindPreFlight(ctx, framework.NewCycleState(), plain, "node"); s.Code() != fwk.Skip {
		t.Errorf("PreBindPreFlight of a pod without a gang: %v, want Skip", s)
	}
	if r, s := f.p.PreBindPreFlight(ctx, framework.NewCycleState(), pods[0], "node"); !s.IsSuccess() || r == nil || r.AllowParallel {
		t.Errorf("PreBindPreFlight of a gang pod: %+v %v, want Success, not in parallel", r, s)
	}
	for i, pod := range pods[:bindSlots] {
		if s := f.p.PreBind(ctx, states[i], pod, "node"); !s.IsSuccess() {
			t.Fatalf("PreBind of gang pod %d of %d slots: %v", i, bindSlots, s)
		}
	}
	// Pods without a gang never wait, whatever gang pods hold.
	if s := f.p.PreBind(ctx, framework.NewCycleState(), plain, "node"); !s.IsSuccess() {
		t.Errorf("PreBind of a pod without a gang with every slot held: %v", s)
	}

	// The next gang pod waits until a slot is given back; cancelled, it
	// gives up holding nothing.
	next := pods[bindSlots]
	cancelled, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("preempted"))
	if s := f.p.PreBind(cancelled, framework.NewCycleState(), next, "node"); s.IsSuccess() || s.AsError().Error() != "preempted" {
		t.Errorf("PreBind cancelled while waiting: %v, want the cancel cause", s)
	}
	done := make(chan *fwk.Status)
	go func() { done <- f.p.PreBind(ctx, states[bindSlots], next, "node") }()
	select {
	case s := <-done:
		t.Fatalf("PreBind with every slot held returned %v", s)
	case <-time.After(50 * time.Millisecond):
	}
	f.p.PostBind(ctx, states[0], pods[0], "node")
	f.p.PostBind(ctx, states[0].Clone(), pods[0], "node") // a slot is given back once, clones included
	if s := <-done; !s.IsSuccess() {
		t.Fatalf("PreBind after a slot was given back: %v", s)
	}
	if len(f.p.binds) != bindSlots {
		t.Errorf("%d slots held, want %d", len(f.p.binds), bindSlots)
	}

	// A failed bind gives its slot back, and its gang falls below min: the
	// member still waiting for a slot then gives up instead of binding.
	last := pods[bindSlots+1]
	go func() { done <- f.p.PreBind(ctx, states[bindSlots+1], last, "node") }()
	f.p.Unreserve(ctx, states[1], pods[1], "node")
	if s := <-done; s.IsSuccess() || !strings.Contains(s.Message(), "gave up the attempt") {
		t.Errorf("PreBind of a member whose gang failed while it waited: %v, want a refusal", s)
	}
	f.p.Unreserve(ctx, states[bindSlots+1], last, "node")
	if want := bindSlots - 1; len(f.p.binds) != want {
		t.Errorf("%d slots held after a failed bind and a refused member, want %d", len(f.p.binds), want)
	}
}

// TestSlotWaitersOfAFailedAttemptNoLongerCount: a gang that fails without
// backoff (a member deleted) while members wait for bind slots does not
// count them as placed for its next attempt, and they are refused before
// they bind, so a replacement cannot complete the min with them.
func TestSlotWaitersOfAFailedAttemptNoLongerCount(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	n := bindSlots + 2
	pods, states := f.placedGang("big", n)
	for i, pod := range pods[:bindSlots] {
		if s := f.p.PreBind(ctx, states[i], pod, "node"); !s.IsSuccess() {
			t.Fatalf("PreBind of gang pod %d: %v", i, s)
		}
	}
	waiter := pods[bindSlots]
	done := make(chan *fwk.Status)
	go func() { done <- f.p.PreBind(ctx, states[bindSlots], waiter, "node") }()

	f.st.OnPodDeleted(pods[n-1]) // below min: the attempt ends, no backoff
	f.flush()
	replacement := builder.MakePod("ns", "big-new").Label(PodGroupLabel, "big").Obj()
	replacement.UID = "big-new"
	replacement.CreationTimestamp = pods[0].CreationTimestamp
	f.st.OnPod(replacement)
	f.flush()
	if code, _ := f.schedule(replacement); code != fwk.Wait {
		t.Fatalf("Permit of the replacement: %v; want Wait: the members of the failed attempt must not count toward min", code)
	}

	f.p.Unreserve(ctx, states[0], pods[0], "node") // a slot frees
	if s := <-done; s.IsSuccess() {
		t.Fatalf("a member of the failed attempt bound after waiting for a slot")
	}
}
