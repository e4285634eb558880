package queuestatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/generated/clientset/versioned/fake"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

// TestWriteChanged: a pass writes at most its limit of changed statuses,
// says whether changed ones are left, and the next pass goes on after the
// queue written last, so that queues whose status changes on every pass
// do not keep the others from being written.
func TestWriteChanged(t *testing.T) {
	st, client := queues(25)
	w := &Writer{State: st, Client: client}
	ctx := context.Background()

	// pass writes one pass and returns the queues it wrote, feeding them
	// back to the state as the informer would, except for the queues in
	// stale, whose status the informer is late to show.
	pass := func(stale ...string) (written []string, more bool) {
		client.ClearActions()
		more = w.writeChanged(ctx, 10)
		for _, a := range client.Actions() {
			q := a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.Queue)
			written = append(written, q.Name)
			if !slices.Contains(stale, q.Name) {
				st.OnQueue(q)
			}
		}
		return written, more
	}

	for _, tc := range []struct {
		stale    []string
		want     []string
		wantMore bool
	}{
		// q00 and q10 keep looking changed, as if their use changed again.
		{stale: []string{"q00"}, want: names(0, 10), wantMore: true},
		{stale: []string{"q10"}, want: names(10, 20), wantMore: true},
		{want: append(names(20, 25), "q00", "q10")},
		{want: nil},
	} {
		written, more := pass(tc.stale...)
		if !slices.Equal(written, tc.want) || more != tc.wantMore {
			t.Errorf("pass wrote %v (more %t), want %v (more %t)", written, more, tc.want, tc.wantMore)
		}
	}
}

// TestWriteChangedFailing: when writes fail, a pass still writes only its
// limit, and does not ask for the next pass at once: a write the apiserver
// keeps refusing waits for a change or the resync.
func TestWriteChangedFailing(t *testing.T) {
	st, client := queues(25)
	client.PrependReactor("update", "queues", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errRefused
	})
	w := &Writer{State: st, Client: client}
	for range 2 {
		client.ClearActions()
		if more := w.writeChanged(context.Background(), 10); more {
			t.Errorf("a pass whose writes failed asks for the next at once")
		}
		if n := len(client.Actions()); n != 10 {
			t.Errorf("a pass tried %d writes, want 10", n)
		}
	}
	if w.last != "q19" {
		t.Errorf("after two passes the last queue tried is %q, want q19: failing queues must not hold the others back", w.last)
	}
}

// TestStart: the loop makes a pass of at most writesPerSecond writes each
// minInterval while changed statuses are left, and after a pass whose
// writes failed waits for a change or the resync, not minInterval.
func TestStart(t *testing.T) {
	st, client := queues(25)
	var refuse atomic.Bool
	client.PrependReactor("update", "queues", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errRefused
		}
		st.OnQueue(a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.Queue)) // as the informer would
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Now())
	idle := make(chan struct{}, 10)
	w := &Writer{State: st, Client: client, Clock: clk, idle: func() { idle <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()

	// interval waits until the loop has made writes in all and waits out
	// minInterval (its timer beside the resync ticker).
	interval := func(writes int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return len(client.Actions()) == writes && clk.Waiters() == 2, nil
		})
		if err != nil {
			t.Fatalf("want %d writes and the loop waiting out minInterval, have %d writes and %d timers", writes, len(client.Actions()), clk.Waiters())
		}
	}
	// waiting waits until the loop waits for a change or the resync,
	// having made writes in all. Unless a change is pending (the informer's
	// echo of the loop's own writes), it then waits on the resync ticker
	// alone.
	waiting := func(writes int, pending bool) {
		t.Helper()
		select {
		case <-idle:
		case <-time.After(10 * time.Second):
			t.Fatalf("the loop never waited for a change or the resync; %d writes", len(client.Actions()))
		}
		if n, timers := len(client.Actions()), clk.Waiters(); n != writes || !pending && timers != 1 {
			t.Fatalf("waiting for a change after %d writes with %d timers, want %d writes and the resync ticker alone", n, timers, writes)
		}
	}

	// 25 queues without status: 10, 10, then 5, a pass each minInterval.
	interval(10)
	clk.Step(minInterval)
	interval(20)
	clk.Step(minInterval)
	waiting(25, true)
	interval(25)
	clk.Step(minInterval)
	waiting(25, false)

	// A new queue's write is refused: the loop then waits for a change or
	// the resync, not minInterval.
	refuse.Store(true)
	st.OnQueue(builder.MakeQueue("q99").Obj())
	interval(25)
	clk.Step(minInterval)
	waiting(26, false)
	clk.Step(resync)
	interval(26)
	clk.Step(minInterval)
	waiting(27, false)

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v", err)
	}
}

// errRefused is how the apiserver refuses a status write the scheduler
// may not make.
var errRefused = apierrors.NewForbidden(v1alpha1.Resource("queues"), "q", errors.New("no RBAC"))

// queues are a state and a fake API with n Queues, q00 onwards, with no
// status yet.
func queues(n int) (*state.State, *fake.Clientset) {
	st := statetest.New()
	var objs []runtime.Object
	for _, name := range names(0, n) {
		q := builder.MakeQueue(name).Obj()
		st.OnQueue(q)
		objs = append(objs, q)
	}
	return st, fake.NewSimpleClientset(objs...)
}

// names are q<from>..q<to-1>.
func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("q%02d", i))
	}
	return out
}
