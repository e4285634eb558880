package queuestatus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/generated/clientset/versioned/fake"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
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
		return true, nil, apierrors.NewForbidden(v1alpha1.Resource("queues"), "q", errors.New("no RBAC"))
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

// queues are a state and a fake API with n Queues, q00 onwards, with no
// status yet.
func queues(n int) (*state.State, *fake.Clientset) {
	st := state.New(state.DefaultSettings())
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
