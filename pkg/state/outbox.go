package state

import (
	"context"
	"iter"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Framework is the part of the scheduler's framework handle the state acts
// through: waking pods in the scheduling queue, the pods waiting at Permit,
// and events. fwk.Handle implements it.
type Framework interface {
	Activate(logger klog.Logger, pods map[string]*corev1.Pod)
	GetWaitingPod(uid types.UID) fwk.WaitingPod
	EventRecorder() events.EventRecorderLogger
}

// outbox holds what the state decided under its lock and must do through
// the framework: one goroutine does it, in order, with no lock of the
// state's held. That is what lets PreEnqueue and the queue's Less (which
// kube-scheduler calls under the scheduling queue's lock) change the state:
// a wake-up they cause reaches the queue later, from here, never from
// inside the queue's own call.
type outbox struct {
	mu     sync.Mutex
	queue  []func(Framework)
	signal chan struct{}
}

func newOutbox() *outbox { return &outbox{signal: make(chan struct{}, 1)} }

// push queues f; it never blocks.
func (o *outbox) push(f func(Framework)) {
	o.mu.Lock()
	o.queue = append(o.queue, f)
	o.mu.Unlock()
	select {
	case o.signal <- struct{}{}:
	default:
	}
}

// runOutbox does what the state queued for the framework, once every
// informer feeding it has synced. kube-scheduler sets its frameworks' pod
// activator after it builds them (and so after Attach) and starts its
// informers after that: a wake-up done before they synced could reach a
// framework with no activator yet.
func (s *State) runOutbox(ctx context.Context, fw Framework) {
	if s.WaitForSync(ctx) != nil {
		return
	}
	s.out.run(ctx, fw)
}

// run does what is queued until ctx ends.
func (o *outbox) run(ctx context.Context, fw Framework) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.signal:
			o.drain(fw)
		}
	}
}

// drain does everything queued so far.
func (o *outbox) drain(fw Framework) {
	for {
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		o.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, f := range batch {
			f(fw)
		}
	}
}

// activateLocked wakes pods in the scheduling queue, later.
func (s *State) activateLocked(pods iter.Seq[*corev1.Pod]) {
	wake := map[string]*corev1.Pod{}
	for p := range pods {
		wake[p.Namespace+"/"+p.Name] = p
	}
	if len(wake) == 0 {
		return
	}
	s.out.push(func(fw Framework) { fw.Activate(klog.Background(), wake) })
}

// leavingAttempt are a gang's members reserved in an attempt that has
// failed, on their way back to the scheduling queue: woken, they are
// tried again as soon as they are back (kube-scheduler keeps the wake of
// a pod in flight).
func leavingAttempt(g *gangEntry) iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for _, e := range g.members {
			if e.placed() && !e.bound && e.tryAttempt != g.attempt && !yield(e.pod) {
				return
			}
		}
	}
}

// pending are a gang's members not placed.
func pending(g *gangEntry) iter.Seq[*corev1.Pod] {
	return func(yield func(*corev1.Pod) bool) {
		for _, e := range g.members {
			if !e.placed() && !yield(e.pod) {
				return
			}
		}
	}
}

// allowLocked lets pods waiting at Permit for the gang plugin bind, later.
func (s *State) allowLocked(uids []types.UID) {
	if len(uids) == 0 || s.wiring.permitPlugin == "" {
		return
	}
	plugin := s.wiring.permitPlugin
	s.out.push(func(fw Framework) {
		for _, uid := range uids {
			if wp := fw.GetWaitingPod(uid); wp != nil {
				wp.Allow(plugin)
			}
		}
	})
}

// rejectLocked makes pods waiting at Permit give back their nodes, later.
func (s *State) rejectLocked(uids []types.UID, msg string) {
	if len(uids) == 0 {
		return
	}
	plugin := s.wiring.permitPlugin
	s.out.push(func(fw Framework) {
		for _, uid := range uids {
			if wp := fw.GetWaitingPod(uid); wp != nil {
				wp.Reject(plugin, msg)
			}
		}
	})
}

// eventLocked records an event, later.
func (s *State) eventLocked(regarding runtime.Object, eventType, reason, action, note string) {
	s.out.push(func(fw Framework) {
		fw.EventRecorder().Eventf(regarding, nil, eventType, reason, action, "%s", note)
	})
}

// Flush does at once everything the state has queued for the framework.
// Tests use it; the scheduler's own goroutine does the same continuously.
func (s *State) Flush(fw Framework) { s.out.drain(fw) }

// discard is the framework of a read-only state: what the state decides is
// dropped, not done.
type discard struct{}

func (discard) Activate(klog.Logger, map[string]*corev1.Pod) {}
func (discard) GetWaitingPod(types.UID) fwk.WaitingPod       { return nil }

// EventRecorder drops events (a FakeRecorder without a channel).
func (discard) EventRecorder() events.EventRecorderLogger { return &events.FakeRecorder{} }
