package outcome

import (
	"fmt"
	"math"

	"cardinal.dev/cardinal/pkg/sim/record"
)

const (
	// MaxCreationLag is how late, in wall seconds at the 99th percentile,
	// pods may appear after their job's submit time for the arrivals to
	// be the trace's.
	MaxCreationLag = 1.0
	// MinJobOverAttempt is how many scheduling attempts (p99) the shortest
	// compressed job must last at least, and MinJobSeconds how many wall
	// seconds: shorter, and the scheduler's own latency is part of every
	// job's run time.
	MinJobOverAttempt = 50.0
	MinJobSeconds     = 2.0
	// SampleTolerance is how closely a sample replayed at K/2 must agree.
	SampleTolerance = 0.05
)

// Validity says whether a run measured what it claims (SPEC §8): pods
// created on time, the shortest compressed job far longer than a
// scheduling attempt, the simulated kubelet's writes all made, and the
// sample at K/2 agreeing when it was run.
func Validity(numbers []record.Numbers, writeErrors map[string]int, sample *record.SampleCheck) record.Validity {
	v := record.Validity{Sample: sample}
	for _, n := range numbers {
		if n.CreationLagP99 >= MaxCreationLag {
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: pods appeared %.2f s after their submit time (p99), not under %.0f s: the arrivals were late; use a smaller compression", n.Scheduler, n.CreationLagP99, MaxCreationLag))
		}
		if need := max(MinJobOverAttempt*n.AttemptP99, MinJobSeconds); n.ShortestJob < need {
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: the shortest job runs %.2f s compressed, under %.2f s (%g scheduling attempts at p99 %.1f ms, and at least %.0f s): use a smaller compression", n.Scheduler, n.ShortestJob, need, MinJobOverAttempt, n.AttemptP99*1000, MinJobSeconds))
		}
		if e := writeErrors[n.Scheduler]; e > 0 {
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: %d simulated kubelet writes failed", n.Scheduler, e))
		}
	}
	if sample != nil && !sample.Agree {
		v.Reasons = append(v.Reasons, fmt.Sprintf("a sample of %d jobs replayed with %s at K and K/2 disagrees by more than %.0f %%: allocation %.3f vs %.3f, mean job completion %.0f s vs %.0f s; use a smaller compression",
			sample.Jobs, sample.Scheduler, sample.Tolerance*100, sample.AllocationAtK, sample.AllocationAtHalfK, sample.MeanJCTAtK, sample.MeanJCTAtHalfK))
	}
	v.Valid = len(v.Reasons) == 0
	return v
}

// Agree fills in whether a sample's two replays agree within tolerance.
func Agree(s *record.SampleCheck) {
	s.Tolerance = SampleTolerance
	s.Agree = near(s.AllocationAtK, s.AllocationAtHalfK, s.Tolerance) && near(s.MeanJCTAtK, s.MeanJCTAtHalfK, s.Tolerance)
}

func near(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// MeanJCT is the mean completion time of the jobs that completed.
func MeanJCT(jobs []record.Job) float64 {
	var sum float64
	var n int
	for _, j := range jobs {
		if j.Done >= 0 {
			sum += j.Done - j.Submit
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
