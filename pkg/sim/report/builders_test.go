package report

import (
	"fmt"
	"math"
	"time"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// runBuilder builds a record.Run row by row for tests.
type runBuilder struct{ r record.Run }

func makeRun(trace string) *runBuilder {
	return &runBuilder{r: record.Run{Summary: record.Summary{
		Trace:       trace,
		About:       "A synthetic trace for tests: two queues sharing sixteen H100 cards, one of them sliced into MIG 1g slices.",
		Compression: 60,
		Started:     time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
	}}}
}

func (b *runBuilder) numbers(n record.Numbers) *runBuilder {
	b.r.Summary.Schedulers = append(b.r.Summary.Schedulers, n)
	return b
}

// cluster adds scheduler s's whole-cluster row at t, given in whole cards
// and written as a replay writes it: in thousandths of a card, but demand.
func (b *runBuilder) cluster(s string, t float64, allocated, capacity int64, demand float64) *runBuilder {
	b.r.Timeline = append(b.r.Timeline, record.Sample{Scheduler: s, T: t, PerCard: 1000,
		Allocated: allocated * 1000, Request: int64(demand * 1000), Capacity: capacity * 1000, Demand: demand, Capability: -1, Guarantee: -1})
	return b
}

// queue adds queue q's row for model at t, in the model's own units.
func (b *runBuilder) queue(s string, t float64, q, model string, perCard int, allocated, deserved int64) *runBuilder {
	b.r.Timeline = append(b.r.Timeline, record.Sample{Scheduler: s, T: t, Queue: q, Model: model, PerCard: perCard,
		Allocated: allocated, Request: allocated, Deserved: deserved, Guarantee: 0, Capability: -1})
	return b
}

func (b *runBuilder) job(j record.Job) *runBuilder {
	b.r.Jobs = append(b.r.Jobs, j)
	return b
}

func (b *runBuilder) move(s string, t float64, from, to string) *runBuilder {
	b.r.Moves = append(b.r.Moves, record.Move{Scheduler: s, T: t, From: from, To: to, Model: "NVIDIA-H100", Node: "node-1"})
	return b
}

func (b *runBuilder) validity(v record.Validity) *runBuilder {
	b.r.Summary.Validity = v
	return b
}

func (b *runBuilder) check(c record.Check) *runBuilder {
	b.r.Summary.Checks = append(b.r.Summary.Checks, c)
	return b
}

func (b *runBuilder) obj() *record.Run { return &b.r }

func ptr(v float64) *float64 { return &v }

// smallRun is two schedulers, two queues (research with whole cards and
// MIG slices, production with whole cards), three samples, a few jobs and
// moves.
func smallRun() *runBuilder {
	b := makeRun("small")
	for _, s := range []string{"cardinal", "scheduler-plugins"} {
		b.numbers(record.Numbers{Scheduler: s, Jobs: 3, Completed: 2, StuckGangs: 1, PartialGangs: 1, UnfinishedJob: 1,
			Allocation: 0.875, AllocationContended: 0.95, ContendedSeconds: 1800, OffShare: 2, MaxOffShareSeconds: 300,
			WithinShare: 0.9, BackAndForth: 1, Moves: 2, Evictions: 3, Killed: 1, GPUHoursLost: 2.5, FirstChoice: 0.75,
			WaitP50: 30, WaitP90: 600, WaitP99: 900, JCTP50: 3600, JCTP90: 5400, JCTP99: 7000, Makespan: 7200,
			CreationLagP99: 0.2, AttemptP99: 0.004, ShortestJob: 12, WallSeconds: 130})
		for i, t := range []float64{0, 1800, 3600} {
			b.cluster(s, t, int64(8+4*i), 16, float64(10+4*i))
			b.queue(s, t, "research", "NVIDIA-H100", 1, int64(4+i), 6)
			b.queue(s, t, "research", "NVIDIA-H100-MIG-1g", 7, 7, 7)
			b.queue(s, t, "production", "NVIDIA-H100", 1, int64(3+3*i), 9)
		}
		b.job(record.Job{Scheduler: s, Name: "train-a", Queue: "research", Pods: 4, Min: 4, Cards: 1, Submit: 0, MinBound: 30, Done: 3600,
			Evicted: 2, GPUHoursLost: 2, Alternatives: 4, FirstChoice: 3})
		b.job(record.Job{Scheduler: s, Name: "serve-b", Queue: "production", Pods: 2, Min: 1, Cards: 1, Submit: 600, MinBound: 1200, Done: 6000,
			Evicted: 1, Killed: 1, GPUHoursLost: 0.5, Partial: true, PartialSeconds: 4})
		b.job(record.Job{Scheduler: s, Name: "stuck-c", Queue: "research", Pods: 8, Min: 8, Cards: 1, Submit: 900, MinBound: -1, Done: -1})
		b.move(s, 1000, "research", "production").move(s, 1300, "production", "research")
	}
	b.validity(record.Validity{Valid: false, Reasons: []string{"pod creation lag p99 0.2 s is over 1 % of the shortest job"},
		Sample: &record.SampleCheck{Scheduler: "cardinal", Jobs: 20, Tolerance: 0.05, AllocationAtK: 0.87, AllocationAtHalfK: 0.86,
			MeanJCTAtK: 3000, MeanJCTAtHalfK: 3100, Agree: true}})
	b.check(record.Check{Scheduler: "cardinal", Metric: "allocation", Value: 0.875, Range: record.Range{Min: ptr(0.8)}, OK: true})
	b.check(record.Check{Scheduler: "scheduler-plugins", Metric: "stuckGangs", Value: 1, Range: record.Range{Max: ptr(0)}, OK: false})
	return b
}

// previewRun is a richer run to look at: six hours sampled every five
// minutes, twelve queues (two left out of the queue charts), waits from
// none to hours, and moves back and forth.
func previewRun() *record.Run {
	b := makeRun("preview: six hours, twelve queues")
	scheds := []string{"cardinal", "default-scheduler", "scheduler-plugins"}
	queues := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"}
	for si, s := range scheds {
		b.numbers(record.Numbers{Scheduler: s, Jobs: 60, Completed: 55 - 5*si, StuckGangs: si, PartialGangs: 2 * si, UnfinishedJob: 5 + 5*si,
			Allocation: 0.9 - 0.1*float64(si), AllocationContended: 0.97 - 0.1*float64(si), ContendedSeconds: 9000,
			OffShare: 3 * si, MaxOffShareSeconds: 600 * float64(si), WithinShare: 0.95 - 0.2*float64(si), BackAndForth: 4 * si,
			Moves: 10 * (si + 1), Evictions: 5 * si, GPUHoursLost: 3.25 * float64(si), FirstChoice: 0.9 - 0.3*float64(si),
			WaitP50: 60, WaitP90: 1800, WaitP99: 7200, JCTP50: 4000, JCTP90: 12000, JCTP99: 20000, Makespan: 21600,
			CreationLagP99: 0.3, AttemptP99: 0.012, ShortestJob: 30, WallSeconds: 360})
		for step := 0; step <= 72; step++ {
			t := float64(step) * 300
			demand := 40 + 30*math.Sin(t/5000) + float64(si)
			capacity := int64(64)
			if t > 14400 {
				capacity = 56 // a node removed
			}
			allocated := int64(math.Min(demand*(1-0.1*float64(si)), float64(capacity)))
			b.cluster(s, t, allocated, capacity, demand)
			for qi, q := range queues {
				share := float64(allocated) / float64(len(queues))
				wobble := 1 + 0.5*math.Sin(t/3000+float64(qi)+float64(si))
				b.queue(s, t, q, "NVIDIA-H100", 1, int64(share*wobble*float64(qi%4+1)/2.5), int64(64/len(queues)*(qi%4+1)/2))
				if qi == 0 {
					b.queue(s, t, q, "NVIDIA-H100-MIG-1g", 7, int64(7+step%7), 14)
				}
			}
		}
		for j := 0; j < 60; j++ {
			submit := float64(j) * 300
			wait := math.Pow(10, float64((j*7+si*3)%40)/10) - 1 // 0 s to about 2.8 h
			if j%17 == 0 {
				wait = 0
			}
			job := record.Job{Scheduler: s, Name: fmt.Sprintf("job-%02d", j), Queue: queues[j%len(queues)], Pods: 4, Min: 2, Cards: 1,
				Submit: submit, MinBound: submit + wait, Done: submit + wait + 600 + float64(j%9)*900}
			if j%13 == si+5 {
				job.MinBound, job.Done = -1, -1
			}
			if si > 0 && j%11 == 0 {
				job.Partial, job.PartialSeconds, job.Evicted, job.GPUHoursLost = true, 8, 2, 1.5
			}
			if j%3 == 0 {
				job.Alternatives, job.FirstChoice = 4, 4-si
			}
			b.job(job)
		}
		for m := 0; m < 10*(si+1); m++ {
			from, to := queues[m%3], queues[(m+1)%3]
			b.move(s, float64(600+m*2000/(si+1)), from, to)
		}
	}
	// The gang, eviction and first-choice numbers agree with the jobs.
	for i := range b.r.Summary.Schedulers {
		n := &b.r.Summary.Schedulers[i]
		f := jobFates(b.r.Jobs, n.Scheduler)
		n.StuckGangs, n.PartialGangs, n.Evictions, n.Killed, n.GPUHoursLost = len(f.stuck), len(f.partial), f.evicted, f.killed, f.lost
		n.FirstChoice = float64(f.firstChoice) / float64(f.alternatives)
	}
	b.validity(record.Validity{Valid: true, Sample: &record.SampleCheck{Scheduler: "cardinal", Jobs: 20, Tolerance: 0.05,
		AllocationAtK: 0.9, AllocationAtHalfK: 0.89, MeanJCTAtK: 6000, MeanJCTAtHalfK: 6100, Agree: true}})
	b.check(record.Check{Scheduler: "cardinal", Metric: "allocation", Value: 0.9, Range: record.Range{Min: ptr(0.85), Max: ptr(1)}, OK: true})
	return b.obj()
}
