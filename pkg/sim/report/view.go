package report

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// view is what every part of the report agrees on about a run: the order of
// the schedulers, the file name each gets, the queues in a fixed order, and
// the span of trace time with the unit it is drawn in. Colours follow from
// the orders, so a scheduler or a queue has one colour in every chart.
type view struct {
	run *record.Run
	// schedulers are in the order the summary lists them, then any seen
	// only in the timeline, jobs or moves, by name.
	schedulers []string
	// slugs are the schedulers' names as they appear in file names.
	slugs map[string]string
	// queues are every queue in the timeline, by name; shown are those the
	// queue charts draw on their own (topQueues), hidden how many are not.
	queues []string
	shown  []string
	hidden int
	// span is trace seconds from the start to the last thing recorded.
	span float64
	unit timeUnit
}

// timeUnit is how trace time is shown on a chart's axis.
type timeUnit struct {
	name    string
	seconds float64
}

var (
	minutes = timeUnit{name: "minutes", seconds: 60}
	hours   = timeUnit{name: "hours", seconds: 3600}
)

// unitFor draws a span longer than two hours in hours, else in minutes.
func unitFor(span float64) timeUnit {
	if span > 2*3600 {
		return hours
	}
	return minutes
}

func newView(run *record.Run) *view {
	v := &view{run: run, slugs: map[string]string{}}
	seen := map[string]bool{}
	for _, n := range run.Summary.Schedulers {
		if !seen[n.Scheduler] {
			seen[n.Scheduler] = true
			v.schedulers = append(v.schedulers, n.Scheduler)
		}
	}
	var others []string
	other := func(s string) {
		if !seen[s] {
			seen[s] = true
			others = append(others, s)
		}
	}
	queues := map[string]bool{}
	for _, s := range run.Timeline {
		other(s.Scheduler)
		if s.Queue != "" {
			queues[s.Queue] = true
		}
		v.span = finiteMax(v.span, s.T)
	}
	for _, j := range run.Jobs {
		other(j.Scheduler)
		v.span = finiteMax(v.span, j.Submit)
		v.span = finiteMax(v.span, j.Done)
	}
	for _, m := range run.Moves {
		other(m.Scheduler)
		v.span = finiteMax(v.span, m.T)
	}
	slices.Sort(others)
	v.schedulers = append(v.schedulers, others...)
	for q := range queues {
		v.queues = append(v.queues, q)
	}
	slices.Sort(v.queues)
	v.shown, v.hidden = topQueues(run.Timeline, v.queues)
	v.unit = unitFor(v.span)

	taken := map[string]bool{}
	for _, s := range v.schedulers {
		base := slug(s)
		name := base
		for i := 2; taken[name]; i++ {
			name = base + "-" + strconv.Itoa(i)
		}
		taken[name] = true
		v.slugs[s] = name
	}
	return v
}

// numbers returns the summary's numbers for scheduler s.
func (v *view) numbers(s string) (record.Numbers, bool) {
	for _, n := range v.run.Summary.Schedulers {
		if n.Scheduler == s {
			return n, true
		}
	}
	return record.Numbers{}, false
}

// schedulerIndex is s's place in the report's order, which picks its colour.
func (v *view) schedulerIndex(s string) int {
	return slices.Index(v.schedulers, s)
}

// maxSlug keeps a chart's file name well under the 255 bytes file systems
// allow.
const maxSlug = 60

// slug keeps letters, digits, dots, dashes and underscores of a name, so a
// scheduler's name makes a file name that needs no escaping in a link.
func slug(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > maxSlug {
		s = s[:maxSlug]
	}
	s = strings.Trim(s, "-.")
	if s == "" {
		return "scheduler"
	}
	return s
}

func finiteMax(a, b float64) float64 {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return a
	}
	return math.Max(a, b)
}
