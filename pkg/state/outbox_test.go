package state

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// activatorFramework is a framework whose pod activator is set only once
// the informers have synced, as kube-scheduler's is: an Activate before
// that is a nil dereference in kube-scheduler, counted here.
type activatorFramework struct {
	fake.Framework
	set   *atomic.Bool
	early atomic.Int32
}

func (f *activatorFramework) Activate(logger klog.Logger, pods map[string]*corev1.Pod) {
	if !f.set.Load() {
		f.early.Add(1)
	}
	f.Framework.Activate(logger, pods)
}

// TestOutboxWaitsForSync: a wake-up queued before the informers synced
// reaches the framework only after they have, when kube-scheduler has set
// the framework's pod activator; then it is not lost.
func TestOutboxWaitsForSync(t *testing.T) {
	s, _ := newTestState()
	var synced atomic.Bool
	s.wiring.sources = []source{{synced: synced.Load}}
	fw := &activatorFramework{set: &synced}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.runOutbox(ctx, fw)
	s.mu.Lock()
	s.activateLocked(slices.Values([]*corev1.Pod{builder.MakePod("ns", "early").Obj()}))
	s.mu.Unlock()
	for range 100 {
		runtime.Gosched() // give the outbox every chance to act too early
	}
	synced.Store(true)
	activated := func() int {
		return len(fw.Activated())
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return activated() == 1, nil
	}); err != nil {
		t.Fatalf("the wake-up queued before the sync was lost: %d activated", activated())
	}
	if n := fw.early.Load(); n != 0 {
		t.Errorf("%d wake-ups reached the framework before its activator was set", n)
	}
}
