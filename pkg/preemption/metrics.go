package preemption

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metrics on the scheduler's /metrics (SPEC §6), served from the registry
// kube-scheduler already serves.
var (
	attempts = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cardinal",
		Name:           "preemption_attempts_total",
		Help:           "Preemption attempts of starving pods, by result: evicted, or why nothing was (not-eligible, no-victims, does-not-fit, guard, room-free).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	evictions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "cardinal",
		Name:           "preemption_evictions_total",
		Help:           "Pods evicted by preemption, by reason: in-queue (priority or elastic), or reclaim (deserved share, across queues).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	victimsPerAttempt = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "cardinal",
		Name:           "preemption_victims",
		Help:           "Pods evicted per preemption that evicted any.",
		Buckets:        []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		StabilityLevel: metrics.ALPHA,
	})
	attemptDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "cardinal",
		Name:           "preemption_attempt_duration_seconds",
		Help:           "How long planning a preemption took, evictions excluded.",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 16),
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(attempts, evictions, victimsPerAttempt, attemptDuration)
	})
}

// recordAttempt counts an attempt that evicted victims.
func recordAttempt(victims int) {
	attempts.WithLabelValues("evicted").Inc()
	victimsPerAttempt.Observe(float64(victims))
}

// recordEviction counts a victim evicted.
func recordEviction(reclaim bool) {
	reason := "in-queue"
	if reclaim {
		reason = "reclaim"
	}
	evictions.WithLabelValues(reason).Inc()
}
