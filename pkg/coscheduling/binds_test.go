package coscheduling

import (
	"context"
	"errors"
	"testing"
	"time"

	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/test/builder"
)

func TestBindSlots(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pods := f.gang("big", bindSlots+1, bindSlots+1, t0)
	plain := builder.MakePod("ns", "plain").Obj()

	if _, s := f.p.PreBindPreFlight(ctx, framework.NewCycleState(), plain, "node"); s.Code() != fwk.Skip {
		t.Errorf("PreBindPreFlight of a pod without a gang: %v, want Skip", s)
	}
	if _, s := f.p.PreBindPreFlight(ctx, framework.NewCycleState(), pods[0], "node"); !s.IsSuccess() {
		t.Errorf("PreBindPreFlight of a gang pod: %v, want Success", s)
	}
	// Pods without a gang never wait, whatever gang pods hold.
	states := make([]fwk.CycleState, len(pods))
	for i, pod := range pods[:bindSlots] {
		states[i] = framework.NewCycleState()
		if s := f.p.PreBind(ctx, states[i], pod, "node"); !s.IsSuccess() {
			t.Fatalf("PreBind of gang pod %d of %d slots: %v", i, bindSlots, s)
		}
	}
	if s := f.p.PreBind(ctx, framework.NewCycleState(), plain, "node"); !s.IsSuccess() {
		t.Errorf("PreBind of a pod without a gang with every slot held: %v", s)
	}

	// The next gang pod waits until a slot is given back; cancelled, it
	// gives up holding nothing.
	cancelled, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("preempted"))
	last := framework.NewCycleState()
	if s := f.p.PreBind(cancelled, last, pods[bindSlots], "node"); s.IsSuccess() || s.AsError().Error() != "preempted" {
		t.Errorf("PreBind cancelled while waiting: %v, want the cancel cause", s)
	}
	f.p.Unreserve(ctx, last, pods[bindSlots], "node") // holds no slot: gives none back
	done := make(chan *fwk.Status)
	go func() { done <- f.p.PreBind(ctx, last, pods[bindSlots], "node") }()
	select {
	case s := <-done:
		t.Fatalf("PreBind with every slot held returned %v", s)
	case <-time.After(50 * time.Millisecond):
	}
	f.p.PostBind(ctx, states[0], pods[0], "node")
	f.p.PostBind(ctx, states[0], pods[0], "node") // a slot is given back once
	if s := <-done; !s.IsSuccess() {
		t.Fatalf("PreBind after a slot was given back: %v", s)
	}
	if len(f.p.binds) != bindSlots {
		t.Errorf("%d slots held, want %d", len(f.p.binds), bindSlots)
	}

	// A failed bind (Unreserve) and a bound pod (PostBind) give slots back.
	f.p.Unreserve(ctx, states[1], pods[1], "node")
	f.p.PostBind(ctx, last, pods[bindSlots], "node")
	if want := bindSlots - 2; len(f.p.binds) != want {
		t.Errorf("%d slots held after an Unreserve and a PostBind, want %d", len(f.p.binds), want)
	}
}
