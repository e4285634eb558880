package report

import (
	"strconv"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// metric is one row of the numbers table: what it measures, with its unit
// in words, and how one scheduler's value reads.
type metric struct {
	name  string
	value func(record.Numbers) string
}

func count(f func(record.Numbers) int) func(record.Numbers) string {
	return func(n record.Numbers) string { return strconv.Itoa(f(n)) }
}

// metrics are every field of record.Numbers but the scheduler's name, in
// the order the report reads them: jobs, allocation, fairness, disruption,
// waiting, and what the replay itself cost.
var metrics = []metric{
	{"Jobs submitted (jobs)", count(func(n record.Numbers) int { return n.Jobs })},
	{"Jobs completed (jobs)", count(func(n record.Numbers) int { return n.Completed })},
	{"Jobs unfinished when the run ended (jobs)", count(func(n record.Numbers) int { return n.UnfinishedJob })},
	{"Stuck gangs, never at min (gangs)", count(func(n record.Numbers) int { return n.StuckGangs })},
	{"Partial gangs, some but fewer than min pods running (gangs)", count(func(n record.Numbers) int { return n.PartialGangs })},
	{"GPU allocation, time-averaged (percent of capacity)", func(n record.Numbers) string { return percent(n.Allocation) }},
	{"GPU allocation of card models while asked for more than they have (percent of their capacity)", func(n record.Numbers) string { return percent(n.AllocationContended) }},
	{"Time some card model was asked for more than it has (trace time)", func(n record.Numbers) string { return traceTime(n.ContendedSeconds) }},
	{"Capability violations (queue and model pairs)", count(func(n record.Numbers) int { return n.CapabilityViolations })},
	{"Times a queue stayed off its deserved share over 60 trace seconds (times)", count(func(n record.Numbers) int { return n.OffShare })},
	{"Longest time off deserved share (trace time)", func(n record.Numbers) string { return traceTime(n.MaxOffShareSeconds) }},
	{"Queue samples within share tolerance (percent of samples)", func(n record.Numbers) string { return percent(n.WithinShare) }},
	{"Capacity moves between queues (moves)", count(func(n record.Numbers) int { return n.Moves })},
	{"Moves back within 10 trace minutes (moves)", count(func(n record.Numbers) int { return n.BackAndForth })},
	{"Pods evicted by the scheduler (pods)", count(func(n record.Numbers) int { return n.Evictions })},
	{"Pods stopped by the cluster changing (pods)", count(func(n record.Numbers) int { return n.Killed })},
	{"Work lost to evictions and stops (GPU-hours)", func(n record.Numbers) string { return decimal(n.GPUHoursLost, 1) }},
	{"A|B pods placed on their first choice (percent of those placed)", func(n record.Numbers) string { return firstChoice(n.FirstChoice) }},
	{"Submit to min bound, median (trace time)", func(n record.Numbers) string { return traceTime(n.WaitP50) }},
	{"Submit to min bound, 90th percentile (trace time)", func(n record.Numbers) string { return traceTime(n.WaitP90) }},
	{"Submit to min bound, 99th percentile (trace time)", func(n record.Numbers) string { return traceTime(n.WaitP99) }},
	{"Job completion time, median (trace time)", func(n record.Numbers) string { return traceTime(n.JCTP50) }},
	{"Job completion time, 90th percentile (trace time)", func(n record.Numbers) string { return traceTime(n.JCTP90) }},
	{"Job completion time, 99th percentile (trace time)", func(n record.Numbers) string { return traceTime(n.JCTP99) }},
	{"Makespan, until the last job finished or the run ended (trace time)", func(n record.Numbers) string { return traceTime(n.Makespan) }},
	{"Pod creation lag after submit, 99th percentile (wall time)", func(n record.Numbers) string { return wallTime(n.CreationLagP99) }},
	{"Scheduling attempt, 99th percentile (wall time)", func(n record.Numbers) string { return wallTime(n.AttemptP99) }},
	{"Shortest job's run (wall time)", func(n record.Numbers) string { return wallTime(n.ShortestJob) }},
	{"Replay (wall time)", func(n record.Numbers) string { return wallTime(n.WallSeconds) }},
}

// firstChoice reads record.Numbers.FirstChoice, where -1 means no pod
// named alternatives.
func firstChoice(share float64) string {
	if share < 0 {
		return "none named"
	}
	return percent(share)
}

// numbersTable is the side-by-side table: a row per metric, a column per
// scheduler in the summary's order.
func numbersTable(ns []record.Numbers) string {
	var b strings.Builder
	b.WriteString("| Metric |")
	for _, n := range ns {
		b.WriteString(" " + cell(n.Scheduler) + " |")
	}
	b.WriteString("\n|---|")
	for range ns {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, m := range metrics {
		b.WriteString("| " + cell(m.name) + " |")
		for _, n := range ns {
			b.WriteString(" " + cell(m.value(n)) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
