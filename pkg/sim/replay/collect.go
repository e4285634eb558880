package replay

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"

	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/pkg/sim/record"
)

// collectLocked writes each job's fate and the moves into res.
func (c *cluster) collectLocked(res *Result, scheduler string) {
	now := c.now()
	names := make([]string, 0, len(c.jobs))
	for k := range c.jobs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		j := c.jobs[k]
		if !j.partialSince.IsZero() {
			c.closePartialLocked(j, now)
		}
		res.Jobs = append(res.Jobs, record.Job{
			Scheduler: scheduler, Name: j.spec.Name, Queue: j.queue, Pods: j.spec.Pods, Min: j.spec.Min,
			Cards: j.shape.whole, Resource: j.spec.Resource, Units: j.spec.Cards, Duration: j.spec.Duration.Seconds(), CardName: j.spec.CardName, Priority: j.spec.Priority, Preemptibility: j.spec.Preemptibility,
			Submit: j.spec.Submit.Seconds(), MinBound: c.traceSeconds(j.minBound), Done: c.traceSeconds(j.done),
			Evicted: j.evicted, Killed: j.killed, GPUHoursLost: j.lostCardSeconds / 3600,
			Alternatives: j.alternatives, FirstChoice: j.firstChoice,
			Partial: j.partialEver, PartialSeconds: j.partialTotal.Seconds(),
		})
	}
	for _, m := range c.moves {
		m.Scheduler = scheduler
		res.Moves = append(res.Moves, m)
	}
	res.CreationLags = append(res.CreationLags, c.lags...)
	c.kubelet.mu.Lock()
	res.WriteErrors = c.kubelet.errors
	c.kubelet.mu.Unlock()
}

// attemptP99 is the p99 of the scheduler's scheduling attempts, in wall
// seconds, from its scheduler_scheduling_attempt_duration_seconds
// histogram (all results and profiles together).
func attemptP99(ctx context.Context, sched *controlplane.Scheduler) (float64, error) {
	body, err := sched.Get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	return quantileOf(bucketsOf(string(body)), 0.99), nil
}

// inf is the +Inf bucket's bound.
var inf = math.Inf(1)

// bucketsOf adds up the attempt duration histogram's buckets over its
// labels: upper bound -> cumulative count.
func bucketsOf(body string) map[float64]float64 {
	buckets := map[float64]float64{}
	for labels, v := range controlplane.Samples(body)["scheduler_scheduling_attempt_duration_seconds_bucket"] {
		// le is a label of its own, not the end of another's name (profile).
		i := strings.Index(labels, `,le="`)
		if i < 0 {
			if i = strings.Index(labels, `{le="`); i < 0 {
				continue
			}
		}
		rest := labels[i+5:]
		le, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
		if err != nil {
			continue
		}
		buckets[le] += v
	}
	return buckets
}

// quantileOf reads quantile q from cumulative histogram buckets (upper
// bound -> count), interpolating within the bucket as Prometheus does.
func quantileOf(buckets map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := buckets[bounds[len(bounds)-1]]
	if total == 0 {
		return 0
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		n := buckets[b]
		if n >= rank {
			if math.IsInf(b, 1) { // the last finite bound is all we know
				return prevBound
			}
			if n == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(n-prevCount)
		}
		prevBound, prevCount = b, n
	}
	return prevBound
}
