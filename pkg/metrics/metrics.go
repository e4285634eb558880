// Package metrics holds Cardinal's counters and histograms that are
// observed as things happen, on the registry kube-scheduler serves at
// /metrics (SPEC §6). Gauges of the scheduling state are read at scrape
// time instead (pkg/state's Collector).
package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	// GangWait is how long gangs waited from their PodGroup's creation until
	// their min was bound.
	GangWait = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "cardinal",
		Name:           "gang_wait_seconds",
		Help:           "Time from a PodGroup's creation until minMember of its pods were bound.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 18), // 1 s to 36 h
		StabilityLevel: metrics.ALPHA,
	})
	// AdmissionsHeld counts gangs held back by admission, by reason:
	// queue-quota, card-quota, gang-split.
	AdmissionsHeld = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cardinal",
		Name:           "admissions_held_total",
		Help:           "Gangs held back before any of their pods was tried, by reason (queue-quota, card-quota, gang-split), counted each time a gang becomes held for that reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})

	// StaleGangs counts gangs found bound below their min for too long
	// that gave back what they held (SPEC §2.6), and StaleGangPods the
	// pods evicted for it.
	StaleGangs = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "cardinal",
		Name:           "stale_gangs_given_back_total",
		Help:           "Gangs found bound below their minMember for longer than the Permit wait plus staleGangSeconds, whose bound pods were evicted.",
		StabilityLevel: metrics.ALPHA,
	})
	StaleGangPods = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "cardinal",
		Name:           "stale_gang_evictions_total",
		Help:           "Pods evicted because their gang stayed bound below its minMember.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// Register adds the metrics to the registry /metrics serves, once.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(GangWait, AdmissionsHeld, StaleGangs, StaleGangPods)
	})
}
