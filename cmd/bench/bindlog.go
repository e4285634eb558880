package main

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// bindLog records when each pod was first seen bound, its gang and its node.
type bindLog struct {
	mu     sync.Mutex
	at     map[string]time.Time
	gangOf map[string]string
	nodeOf map[string]string
}

func newBindLog() *bindLog {
	return &bindLog{at: map[string]time.Time{}, gangOf: map[string]string{}, nodeOf: map[string]string{}}
}

func (b *bindLog) observe(p *corev1.Pod) {
	if p.Spec.NodeName == "" || fillerOf(p) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, seen := b.at[p.Name]; !seen {
		b.at[p.Name] = time.Now()
		b.gangOf[p.Name] = p.Labels[schedv1alpha1.PodGroupLabel]
		b.nodeOf[p.Name] = p.Spec.NodeName
	}
}

func (b *bindLog) count() (int, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var last time.Time
	for _, t := range b.at {
		if t.After(last) {
			last = t
		}
	}
	return len(b.at), last
}

// first is how long after ready the first pod was seen bound.
func (b *bindLog) first(ready time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var first time.Time
	for _, t := range b.at {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.IsZero() {
		return 0
	}
	return first.Sub(ready)
}

// rate is bound pods and pods per second from when the scheduler was ready
// to the last bind. (Timing from the first bind seen instead was fooled when
// the harness's own watch restarted and saw a burst of binds at once.)
func (b *bindLog) rate(ready time.Time) (int, float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var last time.Time
	for _, t := range b.at {
		if t.After(last) {
			last = t
		}
	}
	d := last.Sub(ready).Seconds()
	if len(b.at) == 0 || d <= 0 {
		return len(b.at), 0
	}
	return len(b.at), float64(len(b.at)) / d
}

func (b *bindLog) partialGangs(min int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	bound := map[string]int{}
	for _, g := range b.gangOf {
		if g != "" {
			bound[g]++
		}
	}
	partial := 0
	for _, n := range bound {
		if n < min {
			partial++
		}
	}
	return partial
}

// onModel counts the pods seen bound to a node of model.
func (b *bindLog) onModel(modelOf func(node string) string, model string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, node := range b.nodeOf {
		if modelOf(node) == model {
			n++
		}
	}
	return n
}
