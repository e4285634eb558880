package report

import (
	"fmt"
	"path/filepath"
	"slices"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// Chart files that are one per run; the others are one per scheduler
// (allocationFile, queuesFile).
const (
	WaitChartFile  = "wait-cdf.png"
	JCTChartFile   = "jct-cdf.png"
	MovesChartFile = "moves.png"
)

func (v *view) allocationFile(s string) string { return "allocation-" + v.slugs[s] + ".png" }

func (v *view) queuesFile(s string) string { return "queues-" + v.slugs[s] + ".png" }

// drawCharts draws every chart that has data into dir and returns the
// names of the files it wrote.
func drawCharts(v *view, dir string) (map[string]bool, error) {
	charts := map[string]*chart{}
	for _, s := range v.schedulers {
		charts[v.allocationFile(s)] = allocationChart(v, s)
		charts[v.queuesFile(s)] = queuesChart(v, s)
	}
	charts[WaitChartFile] = cdfChart(v, "Time from submit to min bound", "wait",
		"jobs that reached min (%)", waits)
	charts[JCTChartFile] = cdfChart(v, "Job completion time (submit to last pod done)", "completion time",
		"jobs that finished (%)", completions)
	charts[MovesChartFile] = movesChart(v)

	names := make([]string, 0, len(charts))
	for name := range charts {
		names = append(names, name)
	}
	slices.Sort(names)
	drawn := map[string]bool{}
	for _, name := range names {
		c := charts[name]
		if c == nil || c.empty() {
			continue
		}
		if err := c.save(filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		drawn[name] = true
	}
	return drawn, nil
}

// timeAxis is the x axis of a chart over trace time.
func (v *view) timeAxis(c *chart) {
	c.xLabel = "trace time (" + v.unit.name + ")"
	c.xScale = v.unit.seconds
	c.xMin, c.xMax = 0, v.span
}

// allocationChart is scheduler s's whole cards allocated against demand
// and capacity over trace time.
func allocationChart(v *view, s string) *chart {
	cl := clusterSeries(v.run.Timeline, s)
	c := &chart{
		title:  "GPU allocation under " + shorten(s, maxLegend),
		yLabel: "whole cards",
		lines: []line{
			{pts: cl.capacity, colour: black, width: 1.2, legend: "capacity"},
			{pts: cl.demand, colour: grey, dashed: true, width: 1.8, legend: "demand (unfinished jobs)"},
			{pts: cl.allocated, colour: colour(v.schedulerIndex(s)), width: 2.2, legend: "allocated"},
		},
	}
	v.timeAxis(c)
	return c
}

// queuesChart is each queue's whole cards allocated under scheduler s
// (solid) against its deserved share (dashed, the same colour).
func queuesChart(v *view, s string) *chart {
	other := ""
	if v.hidden > 0 {
		other = fmt.Sprintf("other %d queues", v.hidden)
	}
	c := &chart{
		title:  "Queues under " + shorten(s, maxLegend) + ": allocated against deserved",
		yLabel: "whole cards",
		extra: []legendEntry{
			{text: "allocated", colour: black},
			{text: "deserved", colour: black, dashed: true},
		},
	}
	v.timeAxis(c)
	for _, q := range queueSeries(v.run.Timeline, s, v.shown, other) {
		col := grey
		if i := slices.Index(v.shown, q.queue); i >= 0 {
			col = colour(i)
		}
		c.lines = append(c.lines,
			line{pts: q.deserved, colour: col, dashed: true, width: 1.5},
			line{pts: q.allocated, colour: col, width: 2, legend: q.queue})
	}
	return c
}

// durationUnit shows durations up to two minutes in seconds, up to two
// hours in minutes, longer ones in hours.
func durationUnit(longest float64) timeUnit {
	if longest <= 120 {
		return timeUnit{name: "seconds", seconds: 1}
	}
	return unitFor(longest)
}

// cdfChart is, per scheduler, the distribution of one duration of its
// jobs, on a log axis when it spans more than two decades.
func cdfChart(v *view, title, what, yLabel string, measure func([]record.Job, string) durations) *chart {
	var all [][]float64
	per := make([]durations, len(v.schedulers))
	longest := 0.0
	for i, s := range v.schedulers {
		per[i] = measure(v.run.Jobs, s)
		all = append(all, per[i].values)
		for _, d := range per[i].values {
			longest = finiteMax(longest, d)
		}
	}
	c := &chart{
		title:  title,
		yLabel: yLabel,
		yScale: 100,
		yMax:   100,
		logX:   needsLog(all...),
	}
	if c.logX {
		c.xLabel = fmt.Sprintf("%s (trace time, log scale; under %g s drawn at %g s)", what, logFloor, logFloor)
	} else {
		unit := durationUnit(longest)
		c.xLabel = what + " (trace " + unit.name + ")"
		c.xScale = unit.seconds
		c.xMin, c.xMax = 0, longest
	}
	for i, s := range v.schedulers {
		pts := cdf(per[i].values)
		if c.logX {
			pts = floorX(pts, logFloor)
		}
		c.lines = append(c.lines, line{
			pts: pts, colour: colour(i), width: 2,
			legend: fmt.Sprintf("%s (%d/%d jobs)", s, len(per[i].values), per[i].jobs),
		})
	}
	return c
}

// movesChart is each scheduler's moves of capacity between queues, added
// up over trace time; it is left out when no scheduler moved any.
func movesChart(v *view) *chart {
	if len(v.run.Moves) == 0 {
		return nil
	}
	c := &chart{
		title:  "Capacity moved between queues",
		yLabel: "moves so far",
		wholeY: true,
	}
	v.timeAxis(c)
	for i, s := range v.schedulers {
		pts := cumulativeMoves(v.run.Moves, s, v.span)
		c.lines = append(c.lines, line{pts: pts, colour: colour(i), width: 2, legend: s})
	}
	return c
}
