package queuestatus

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
)

// minInterval is the time between passes that write statuses: a burst of
// binds becomes one pass, and statuses lag the scheduler by at most about
// this while few queues change.
const minInterval = time.Second

// writesPerSecond bounds the rate of status writes over all queues: a pass
// writes at most this many changed statuses, and passes are minInterval
// apart. Each write of a Queue costs kube-apiserver a validated
// custom-resource update and a watch event to every watcher; with hundreds
// of queues whose use changes with every bind, or a start with a thousand
// queues and no status yet, writing every changed status at once costs the
// control plane more than the binds it competes with. With many queues
// changing at once, statuses then lag by about (changed queues /
// writesPerSecond) seconds, each queue in turn; the metrics endpoint reads
// the scheduler's numbers live.
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
	// Clock paces the passes; nil is the real clock.
	Clock clock.WithTicker

	// idle, when set, is called each time the loop is about to wait for a
	// change or the resync (tests).
	idle func()

	// last is the name of the Queue written last: the next pass starts
	// after it, so that queues changing every second do not keep the
	// others' statuses from being written.
	last string
}

// Start writes statuses whenever the state's queue numbers change, at most
// writesPerSecond in each minInterval, until ctx ends.
func (w *Writer) Start(ctx context.Context) error {
	if err := w.State.WaitForSync(ctx); err != nil {
		return nil
	}
	clk := w.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	ticker := clk.NewTicker(resync)
	defer ticker.Stop()
	for {
		if !w.writeChanged(ctx, writesPerSecond) {
			if w.idle != nil {
				w.idle()
			}
			select {
			case <-ctx.Done():
				return nil
			case <-w.State.Changed():
			case <-ticker.C():
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(minInterval):
		}
	}
}

// writeChanged writes up to limit statuses that differ from the
// scheduler's numbers, in name order starting after the one written last,
// and tells whether changed statuses are left to write at once: not when a
// write failed, so that a write the apiserver keeps refusing (no RBAC for
// queues/status, 429s) waits for a change or the resync like the rest.
func (w *Writer) writeChanged(ctx context.Context, limit int) (more bool) {
	statuses := w.State.QueueStatuses()
	slices.SortFunc(statuses, func(a, b state.QueueStatus) int { return strings.Compare(a.Queue.Name, b.Queue.Name) })
	first, _ := slices.BinarySearchFunc(statuses, w.last, func(qs state.QueueStatus, name string) int {
		return strings.Compare(qs.Queue.Name, name)
	})
	if first < len(statuses) && statuses[first].Queue.Name == w.last {
		first++
	}
	written, failed := 0, false
	now := metav1.Now()
	for i := range statuses {
		qs := statuses[(first+i)%len(statuses)]
		st := Compute(qs, now)
		if equalStatus(qs.Queue.Status, st) {
			continue
		}
		if written >= limit {
			return !failed
		}
		q := qs.Queue.DeepCopy()
		q.Status = st
		written++
		w.last = q.Name
		if _, err := w.Client.SchedulingV1alpha1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			// A conflict means the informer has a newer Queue on its way;
			// its arrival signals a change, and the next pass writes again.
			klog.FromContext(ctx).V(2).Info("Writing Queue status", "queue", q.Name, "err", err)
			failed = true
		}
	}
	return false
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
