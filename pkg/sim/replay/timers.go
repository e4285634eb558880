package replay

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// timers fire each running pod's completion at its deadline, from one
// goroutine, whatever the number of pods.
type timers struct {
	mu   sync.Mutex
	h    timerHeap
	wake chan struct{}
	fire func(types.UID, int)
}

type timer struct {
	at  time.Time
	uid types.UID
	gen int
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

func newTimers(fire func(types.UID, int)) *timers {
	return &timers{wake: make(chan struct{}, 1), fire: fire}
}

// add sets a timer; an older one for the same pod is told apart by gen.
func (t *timers) add(at time.Time, uid types.UID, gen int) {
	t.mu.Lock()
	heap.Push(&t.h, timer{at: at, uid: uid, gen: gen})
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// run fires timers as they come due until ctx ends. fire is called
// without t's lock, so it may add timers.
func (t *timers) run(ctx context.Context) {
	for {
		t.mu.Lock()
		var due []timer
		now := time.Now()
		for t.h.Len() > 0 && !t.h[0].at.After(now) {
			due = append(due, heap.Pop(&t.h).(timer))
		}
		wait := time.Hour
		if t.h.Len() > 0 {
			wait = t.h[0].at.Sub(now)
		}
		t.mu.Unlock()
		for _, d := range due {
			t.fire(d.uid, d.gen)
		}
		if len(due) > 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-t.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}
