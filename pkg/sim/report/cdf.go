package report

import (
	"math"
	"slices"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// logFloor is the least duration, in trace seconds, a log axis shows: a job
// bound the moment it was submitted waited 0, which a log axis cannot
// place, so it is drawn at one second, the trace's own resolution, and the
// axis label says so.
const logFloor = 1.0

// cdf is the empirical distribution of xs: for each distinct value, in
// order, the share of xs at or below it, after a first point at the least
// value with share 0 so the line rises from nothing. NaNs are left out;
// xs is not changed.
func cdf(xs []float64) []point {
	sorted := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			sorted = append(sorted, x)
		}
	}
	if len(sorted) == 0 {
		return nil
	}
	slices.Sort(sorted)
	n := float64(len(sorted))
	pts := []point{{sorted[0], 0}}
	for i, x := range sorted {
		if i+1 < len(sorted) && sorted[i+1] == x {
			continue
		}
		pts = append(pts, point{x, float64(i+1) / n})
	}
	return pts
}

// durations is one scheduler's jobs measured one way: the durations of the
// jobs that got there, and how many jobs it had.
type durations struct {
	values []float64
	jobs   int
}

// waits is scheduler s's time from submit to min bound, over the jobs
// that reached min.
func waits(jobs []record.Job, s string) durations {
	return measure(jobs, s, func(j record.Job) float64 { return j.MinBound })
}

// completions is scheduler s's job completion time, submit to the last pod
// done, over the jobs that finished.
func completions(jobs []record.Job, s string) durations {
	return measure(jobs, s, func(j record.Job) float64 { return j.Done })
}

func measure(jobs []record.Job, s string, end func(record.Job) float64) durations {
	var d durations
	for _, j := range jobs {
		if j.Scheduler != s {
			continue
		}
		d.jobs++
		if e := end(j); e >= 0 && j.Submit >= 0 {
			d.values = append(d.values, max(e-j.Submit, 0))
		}
	}
	return d
}

// needsLog tells whether durations spanning more than two decades, with
// those under logFloor counted at logFloor, are better read on a log axis.
func needsLog(all ...[]float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xs := range all {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			lo = math.Min(lo, math.Max(x, logFloor))
			hi = math.Max(hi, x)
		}
	}
	return hi > 0 && hi/lo > 100
}

// floorX raises every x below floor to floor, for a log axis.
func floorX(pts []point, floor float64) []point {
	out := make([]point, len(pts))
	for i, p := range pts {
		out[i] = point{math.Max(p.X, floor), p.Y}
	}
	return out
}
