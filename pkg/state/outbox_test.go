package state

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/test/builder"
)

// TestOutboxWaitsForSync: a wake-up queued before the informers synced
// reaches the framework only after they have, when kube-scheduler has set
// the framework's pod activator; then it is not lost.
func TestOutboxWaitsForSync(t *testing.T) {
	s, _ := newTestState()
	fw := &fakeFramework{}
	var synced atomic.Bool
	s.sources = []func() bool{synced.Load}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.runOutbox(ctx, fw)
	s.mu.Lock()
	s.activateLocked(slices.Values([]*corev1.Pod{builder.MakePod("ns", "early").Obj()}))
	s.mu.Unlock()
	activated := func() int {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		return len(fw.activated)
	}
	// Three of WaitForSync's polls: nothing may be done before the sync.
	for deadline := time.Now().Add(150 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := activated(); n != 0 {
			t.Fatalf("%d pods activated before the informers synced", n)
		}
	}
	synced.Store(true)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return activated() == 1, nil
	}); err != nil {
		t.Fatalf("the wake-up queued before the sync was lost: %d activated", activated())
	}
}
