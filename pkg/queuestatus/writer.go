package queuestatus

import (
	"context"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
)

// minInterval bounds how often statuses are written: a burst of binds
// becomes one pass, and statuses lag the scheduler by at most about this
// while few queues change.
const minInterval = time.Second

// writesPerSecond bounds the average rate of status writes over all
// queues: a pass writes every changed status, then waits in proportion. Each
// write of a Queue costs kube-apiserver a validated custom-resource update
// and a watch event to every watcher; with hundreds of queues whose use
// changes with every bind, unbounded passes cost the control plane more
// than the binds themselves. With many queues changing at once, statuses
// then lag by about (changed queues / writesPerSecond) seconds; the
// metrics endpoint reads the scheduler's numbers live.
const writesPerSecond = 10

// resync is how often statuses are compared with the scheduler's numbers
// even when nothing signalled a change (a write that failed, say).
const resync = 30 * time.Second

// Writer writes every Queue's status from the state. It runs in the
// scheduler's process (pkg/controllers), while that process holds the
// status writers' lease; it reads no pod itself.
type Writer struct {
	State  *state.State
	Client cardinalclient.Interface
}

// Start writes statuses whenever the state's queue numbers change, at most
// once per minInterval, until ctx ends.
func (w *Writer) Start(ctx context.Context) error {
	if err := w.State.WaitForSync(ctx); err != nil {
		return nil
	}
	ticker := time.NewTicker(resync)
	defer ticker.Stop()
	for {
		written := w.writeAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-w.State.Changed():
		case <-ticker.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause(written)):
		}
	}
}

// pause is how long to wait after a pass that wrote n statuses.
func pause(n int) time.Duration {
	return max(minInterval, time.Duration(n)*time.Second/writesPerSecond)
}

// writeAll writes every status that differs from the scheduler's numbers
// and returns how many it wrote.
func (w *Writer) writeAll(ctx context.Context) int {
	written := 0
	now := metav1.Now()
	for _, qs := range w.State.QueueStatuses() {
		st := Compute(qs, now)
		if equalStatus(qs.Queue.Status, st) {
			continue
		}
		q := qs.Queue.DeepCopy()
		q.Status = st
		written++
		if _, err := w.Client.SchedulingV1alpha1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			// A conflict means the informer has a newer Queue on its way;
			// its arrival signals a change, and the next pass writes again.
			klog.FromContext(ctx).V(2).Info("Writing Queue status", "queue", q.Name, "err", err)
		}
	}
	return written
}

// equalStatus compares ignoring condition transition times.
func equalStatus(a, b v1alpha1.QueueStatus) bool {
	strip := func(s v1alpha1.QueueStatus) v1alpha1.QueueStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	x, y := strip(a), strip(b)
	return reflect.DeepEqual(x.Conditions, y.Conditions) && x.AllocatedSummary == y.AllocatedSummary &&
		reflect.DeepEqual(x.Cards, y.Cards) && x.CardSummary == y.CardSummary &&
		quota.FromList(x.Allocated).String() == quota.FromList(y.Allocated).String() &&
		quota.FromList(x.Deserved).String() == quota.FromList(y.Deserved).String()
}
