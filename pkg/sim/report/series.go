package report

import (
	"cmp"
	"slices"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// maxQueues is how many queues a queue chart draws on their own; the rest
// are added up as one line, since more than ten colours cannot be told
// apart.
const maxQueues = 10

// point is one point of a line, x in trace seconds.
type point struct{ X, Y float64 }

// cluster is one scheduler's cluster over trace time, in whole cards.
type cluster struct {
	allocated, demand, capacity []point
}

// clusterSeries reads scheduler s's rows for the whole cluster in whole
// cards (queue "" and model "").
func clusterSeries(timeline []record.Sample, s string) cluster {
	var rows []record.Sample
	for _, r := range timeline {
		if r.Scheduler == s && r.Queue == "" && r.Model == "" {
			rows = append(rows, r)
		}
	}
	slices.SortStableFunc(rows, func(a, b record.Sample) int { return cmp.Compare(a.T, b.T) })
	var c cluster
	for _, r := range rows {
		// Allocated and Capacity are in 1/PerCard of a card; Demand is
		// in whole cards.
		per := float64(max(r.PerCard, 1))
		c.allocated = append(c.allocated, point{r.T, float64(r.Allocated) / per})
		c.demand = append(c.demand, point{r.T, r.Demand})
		c.capacity = append(c.capacity, point{r.T, float64(r.Capacity) / per})
	}
	return c
}

// queueLine is one queue (or the queues not drawn on their own) over trace
// time, in whole cards.
type queueLine struct {
	queue               string
	allocated, deserved []point
}

// queueSeries adds up scheduler s's rows per queue over the queue's models,
// each divided by its PerCard, at every moment s was sampled. Queues in
// shown get a line each, in that order; the others one line together,
// named other, when there are any. A queue with no row at a moment had
// nothing there.
func queueSeries(timeline []record.Sample, s string, shown []string, other string) []queueLine {
	type sums struct{ allocated, deserved float64 }
	at := map[float64]map[string]*sums{}
	var times []float64
	for _, r := range timeline {
		if r.Scheduler != s || r.Queue == "" {
			continue
		}
		q := r.Queue
		if !slices.Contains(shown, q) {
			q = other
		}
		byQueue, ok := at[r.T]
		if !ok {
			byQueue = map[string]*sums{}
			at[r.T] = byQueue
			times = append(times, r.T)
		}
		if byQueue[q] == nil {
			byQueue[q] = &sums{}
		}
		per := float64(max(r.PerCard, 1))
		byQueue[q].allocated += float64(r.Allocated) / per
		byQueue[q].deserved += float64(r.Deserved) / per
	}
	if len(times) == 0 {
		return nil
	}
	slices.Sort(times)
	names := shown
	if hasOther(at, other) {
		names = append(slices.Clip(shown), other)
	}
	lines := make([]queueLine, 0, len(names))
	for _, q := range names {
		l := queueLine{queue: q}
		for _, t := range times {
			var v sums
			if got := at[t][q]; got != nil {
				v = *got
			}
			l.allocated = append(l.allocated, point{t, v.allocated})
			l.deserved = append(l.deserved, point{t, v.deserved})
		}
		lines = append(lines, l)
	}
	return lines
}

func hasOther[V any](at map[float64]map[string]V, other string) bool {
	for _, byQueue := range at {
		if _, ok := byQueue[other]; ok {
			return true
		}
	}
	return false
}

// topQueues picks the queues a queue chart draws on their own: all of them
// when there are at most maxQueues, else the maxQueues that held or
// deserved the most card-time under any scheduler. They come back by name,
// with how many were left out.
func topQueues(timeline []record.Sample, queues []string) (shown []string, hidden int) {
	if len(queues) <= maxQueues {
		return queues, 0
	}
	weight := map[string]float64{}
	for _, r := range timeline {
		if r.Queue != "" {
			weight[r.Queue] += float64(r.Allocated+r.Deserved) / float64(max(r.PerCard, 1))
		}
	}
	byWeight := slices.Clone(queues)
	slices.SortStableFunc(byWeight, func(a, b string) int {
		return cmp.Or(cmp.Compare(weight[b], weight[a]), cmp.Compare(a, b))
	})
	shown = byWeight[:maxQueues]
	slices.Sort(shown)
	return shown, len(queues) - maxQueues
}

// cumulativeMoves counts scheduler s's moves between queues as trace time
// passes, from 0 at the start to the total at end.
func cumulativeMoves(moves []record.Move, s string, end float64) []point {
	var times []float64
	for _, m := range moves {
		if m.Scheduler == s {
			times = append(times, m.T)
		}
	}
	slices.Sort(times)
	pts := []point{{0, 0}}
	for i, t := range times {
		pts = append(pts, point{t, float64(i + 1)})
	}
	if end > pts[len(pts)-1].X {
		pts = append(pts, point{end, float64(len(times))})
	}
	return pts
}
