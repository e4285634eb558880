// Package outcome turns what a replay recorded into the numbers SPEC §8
// reports, the same way for every scheduler: how full the cards were, how
// long jobs waited and ran, whether gangs were ever partial or stuck,
// whether queues kept to their capability and their deserved share, how much
// capacity moved back and forth between queues, what evictions threw away.
package outcome

import (
	"math"
	"sort"
	"time"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/sim/record"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

const (
	// ShareSettle is how long a queue may stay off its deserved share
	// after demand changed before it counts (trace seconds).
	ShareSettle = 60.0
	// ShareTolerance is how far from its deserved share a queue may be, as
	// a fraction of it, unless one gang is more.
	ShareTolerance = 0.10
	// BackAndForthWindow is how soon capacity moved back counts as taken
	// back and forth (trace seconds).
	BackAndForthWindow = 600.0
)

// Measured is what a replay measured besides its records.
type Measured struct {
	// CreationLags are wall seconds from submit to a job's first pod.
	CreationLags []float64
	// AttemptP99 is the scheduler's scheduling attempt p99, wall seconds.
	AttemptP99 float64
	// ShortestJob is the shortest job's run, wall seconds.
	ShortestJob float64
	Wall        time.Duration
}

// Numbers computes one scheduler's numbers from its timeline, jobs and moves.
func Numbers(scheduler string, timeline []record.Sample, jobs []record.Job, moves []record.Move, m Measured) record.Numbers {
	n := record.Numbers{Scheduler: scheduler, Jobs: len(jobs), FirstChoice: -1,
		CreationLagP99: percentile(m.CreationLags, 0.99), AttemptP99: m.AttemptP99, ShortestJob: m.ShortestJob, WallSeconds: m.Wall.Seconds()}
	var waits, jcts []float64
	var alternatives, first int
	for _, j := range jobs {
		if j.Done >= 0 {
			n.Completed++
			jcts = append(jcts, j.Done-j.Submit)
			n.Makespan = max(n.Makespan, j.Done)
		} else {
			n.UnfinishedJob++
			if j.Min > 1 {
				n.StuckGangs++
			}
		}
		if j.MinBound >= 0 {
			waits = append(waits, j.MinBound-j.Submit)
		}
		if j.Partial && j.Min > 1 {
			n.PartialGangs++
		}
		n.Evictions += j.Evicted
		n.Killed += j.Killed
		n.GPUHoursLost += j.GPUHoursLost
		alternatives += j.Alternatives
		first += j.FirstChoice
	}
	if alternatives > 0 {
		n.FirstChoice = float64(first) / float64(alternatives)
	}
	n.WaitP50, n.WaitP90, n.WaitP99 = percentile(waits, 0.5), percentile(waits, 0.9), percentile(waits, 0.99)
	n.JCTP50, n.JCTP90, n.JCTP99 = percentile(jcts, 0.5), percentile(jcts, 0.9), percentile(jcts, 0.99)
	if n.UnfinishedJob > 0 && len(timeline) > 0 {
		n.Makespan = timeline[len(timeline)-1].T
	}
	allocation(&n, timeline)
	shares(&n, timeline, jobs)
	n.Moves = len(moves)
	n.BackAndForth = backAndForth(moves)
	return n
}

// allocation time-averages whole cards allocated over capacity over the
// run; and, for the time each card model was asked for more than it has
// (its pending and bound pods' requests, as Cardinal counts them, at or
// above its capacity), how much of that model was allocated, added up over
// models in whole cards. A model nobody is waiting for is not counted
// against a scheduler while another model is short.
func allocation(n *record.Numbers, timeline []record.Sample) {
	var all, allT, busy, busyCap float64
	last := map[string]record.Sample{}
	// contended are the intervals, by their end, some model was short in.
	contended := map[float64]float64{}
	for _, s := range timeline {
		if s.Queue != "" {
			continue
		}
		p, seen := last[s.Model]
		last[s.Model] = s
		dt := s.T - p.T
		if !seen || s.Capacity <= 0 || dt <= 0 {
			continue
		}
		if s.Model == "" {
			all += float64(s.Allocated) / float64(s.Capacity) * dt
			allT += dt
			continue
		}
		if s.Request >= s.Capacity {
			per := float64(max(s.PerCard, 1))
			busy += float64(s.Allocated) / per * dt
			busyCap += float64(s.Capacity) / per * dt
			contended[s.T] = dt
		}
	}
	if allT > 0 {
		n.Allocation = all / allT
	}
	if busyCap > 0 {
		n.AllocationContended = busy / busyCap
	}
	for _, dt := range contended {
		n.ContendedSeconds += dt
	}
}

type queueModel struct{ queue, model string }

// shares checks each queue against its capability and its deserved share,
// per card model: a queue above its capability is a violation; one further
// from its deserved share than its tolerance (max(10 % of it, one of its
// gangs)) for longer than ShareSettle is off its share. The share a queue
// is held to is what it deserves or what it asks for, whichever is less: a
// queue's deserved share starts at its guarantee (SPEC §3.2) whether or not
// it asks for it. A queue above its share is off it only while another
// queue of the model is short of its own by one of its gangs or more (it
// could be given a gang and stay within its share): until then it borrows
// capacity no one else can use (SPEC §3.3), a guarantee left idle among
// it.
func shares(n *record.Numbers, timeline []record.Sample, jobs []record.Job) {
	series := map[queueModel][]record.Sample{}
	for _, s := range timeline {
		if s.Queue != "" {
			k := queueModel{s.Queue, s.Model}
			series[k] = append(series[k], s)
		}
	}
	type modelAt struct {
		model string
		t     float64
	}
	// short are the model and sample times at which some queue was short
	// of its share by one of its gangs or more.
	short := map[modelAt]bool{}
	for k, ss := range series {
		gang := max(gangUnits(jobs, k), 1)
		for _, s := range ss {
			if target, _ := shareOf(s, gang); float64(target-s.Allocated) >= gang {
				short[modelAt{k.model, s.T}] = true
			}
		}
	}
	violated := 0
	var within, total int
	for k, ss := range series {
		gang := gangUnits(jobs, k)
		over := false
		var offSince float64 = -1
		for i, s := range ss {
			if s.Capability >= 0 && s.Allocated > s.Capability {
				over = true
			}
			target, tol := shareOf(s, gang)
			below, above := float64(target-s.Allocated) > tol, float64(s.Allocated-target) > tol
			off := below || above && short[modelAt{k.model, s.T}]
			if target > 0 || s.Allocated > 0 {
				total++
				if !off {
					within++
				}
			}
			last := i == len(ss)-1
			if off && offSince < 0 {
				offSince = s.T
			}
			if offSince >= 0 && (!off || last) {
				d := s.T - offSince
				if d > ShareSettle {
					n.OffShare++
				}
				n.MaxOffShareSeconds = max(n.MaxOffShareSeconds, d)
				offSince = -1
			}
		}
		if over {
			violated++
		}
	}
	n.CapabilityViolations = violated
	n.WithinShare = 1
	if total > 0 {
		n.WithinShare = float64(within) / float64(total)
	}
}

// shareOf is the share a queue is held to at a sample, and how far from it
// it may be.
func shareOf(s record.Sample, gang float64) (int64, float64) {
	target := min(s.Deserved, s.Request)
	return target, max(ShareTolerance*float64(target), gang)
}

// gangUnits is the largest min a queue's jobs need of a model, in that
// model's units: one gang.
func gangUnits(jobs []record.Job, k queueModel) float64 {
	want := string(cardmodel.ResourceOf(k.model))
	var out float64
	for _, j := range jobs {
		if j.Queue != k.queue || resourceOf(j.Resource) != want {
			continue
		}
		out = max(out, float64(j.Min*j.Units))
	}
	return out
}

// resourceOf is what a trace job resource is requested as, in the terms
// of cardmodel.ResourceOf ("" for whole cards).
func resourceOf(r string) string {
	switch {
	case trace.MIGProfile(r) != "":
		return "nvidia.com/mig-" + trace.MIGProfile(r)
	case trace.MPSReplicas(r) > 0:
		return string(cardmodel.MPSResource)
	}
	return ""
}

// backAndForth counts capacity moved from one queue to another and back
// within BackAndForthWindow: each move back pairs with one earlier move.
func backAndForth(moves []record.Move) int {
	sorted := append([]record.Move(nil), moves...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].T < sorted[b].T })
	used := make([]bool, len(sorted))
	count := 0
	for i, m := range sorted {
		for j := i - 1; j >= 0; j-- {
			p := sorted[j]
			if m.T-p.T > BackAndForthWindow {
				break
			}
			if !used[j] && p.From == m.To && p.To == m.From && p.Model == m.Model {
				used[j], used[i] = true, true
				count++
				break
			}
		}
	}
	return count
}

// percentile is the q-quantile of xs by nearest rank, 0 for none.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
