package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// doc is report.md being written.
type doc struct {
	strings.Builder
	v     *view
	drawn map[string]bool
}

func (d *doc) para(format string, args ...any) {
	fmt.Fprintf(d, format, args...)
	d.WriteString("\n\n")
}

func (d *doc) heading(title string) { d.para("## %s", title) }

// image embeds a chart by its relative path, or says there was nothing to
// draw.
func (d *doc) image(file, alt, missing string) {
	if d.drawn[file] {
		d.para("![%s](%s)", alt, file)
		return
	}
	d.para("%s", missing)
}

// writeMarkdown writes report.md into dir, linking the charts in drawn.
func writeMarkdown(v *view, drawn map[string]bool, dir string) error {
	d := &doc{v: v, drawn: drawn}
	d.header()
	d.numbers()
	d.validity()
	d.checks()
	d.allocation()
	d.queues()
	d.cdfs()
	d.moves()
	d.gangs()
	d.lost()
	d.alternatives()
	d.data()
	return os.WriteFile(filepath.Join(dir, MarkdownFile), []byte(strings.TrimRight(d.String(), "\n")+"\n"), 0o644)
}

func (d *doc) header() {
	s := d.v.run.Summary
	name := s.Trace
	if name == "" {
		name = "unnamed trace"
	}
	d.para("# cardinal-sim report: %s", name)
	if about := strings.TrimSpace(s.About); about != "" {
		d.para("%s", about)
	}
	d.heading("How it was run")
	var b strings.Builder
	if s.Compression > 0 {
		fmt.Fprintf(&b, "The trace was replayed at K = %s, %s trace seconds to each wall second, ", general(s.Compression), general(s.Compression))
	} else {
		b.WriteString("The trace was replayed (its compression K was not recorded) ")
	}
	if len(d.v.schedulers) == 0 {
		b.WriteString("and recorded no scheduler.")
	} else {
		fmt.Fprintf(&b, "against %s: %s.", plural(len(d.v.schedulers), "scheduler", "schedulers"), list(d.v.schedulers, len(d.v.schedulers)))
	}
	if !s.Started.IsZero() {
		fmt.Fprintf(&b, " The run started at %s.", s.Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if d.v.span > 0 {
		fmt.Fprintf(&b, " Its record spans %s of trace time.", traceTime(d.v.span))
	}
	d.para("%s", b.String())
	var walls []string
	total := 0.0
	for _, n := range s.Schedulers {
		walls = append(walls, fmt.Sprintf("%s %s", n.Scheduler, wallTime(n.WallSeconds)))
		total += n.WallSeconds
	}
	if len(walls) > 0 {
		d.para("Each replay took, in wall time: %s; %s in all.", strings.Join(walls, ", "), wallTime(total))
	}
}

func (d *doc) numbers() {
	d.heading("Numbers")
	ns := d.v.run.Summary.Schedulers
	if len(ns) == 0 {
		d.para("The summary lists no scheduler's numbers.")
		return
	}
	d.para("Trace time is the trace's own clock; wall time is the replay's. Shares are of whole cards.")
	d.WriteString(numbersTable(ns))
	d.WriteString("\n")
}

func (d *doc) validity() {
	d.heading("Validity")
	val := d.v.run.Summary.Validity
	switch {
	case val.Valid:
		d.para("The run is valid: it measured what it claims.")
	default:
		d.para("**The run is not valid**: its numbers do not measure the schedulers alone.")
	}
	if len(val.Reasons) > 0 {
		for _, r := range val.Reasons {
			fmt.Fprintf(d, "- %s\n", strings.TrimSpace(r))
		}
		d.WriteString("\n")
	}
	sc := val.Sample
	if sc == nil {
		d.para("The sample check at K/2 was not run.")
		return
	}
	verdict := "They agree."
	if !sc.Agree {
		verdict = "**They do not agree**: time compression changed the result."
	}
	d.para("A sample of %s was replayed with %s at K and at K/2; its numbers must agree within %s. %s",
		plural(sc.Jobs, "job", "jobs"), sc.Scheduler, percent(sc.Tolerance), verdict)
	d.para("| Sample | at K | at K/2 |\n|---|---:|---:|\n| GPU allocation (percent of capacity) | %s | %s |\n| Mean job completion time (trace time) | %s | %s |",
		percent(sc.AllocationAtK), percent(sc.AllocationAtHalfK), traceTime(sc.MeanJCTAtK), traceTime(sc.MeanJCTAtHalfK))
}

func (d *doc) checks() {
	cs := d.v.run.Summary.Checks
	if len(cs) == 0 {
		return
	}
	d.heading("Expected ranges")
	held := 0
	for _, c := range cs {
		if c.OK {
			held++
		}
	}
	d.para("%d of %s held.", held, plural(len(cs), "check", "checks"))
	d.WriteString("| Metric | Scheduler | Value | Expected | Result |\n|---|---|---:|---|---|\n")
	for _, c := range cs {
		result := "pass"
		if !c.OK {
			result = "**fail**"
		}
		fmt.Fprintf(d, "| %s | %s | %s | %s | %s |\n", cell(c.Metric), cell(c.Scheduler), general(c.Value),
			rangeText(c.Range.Min, c.Range.Max), result)
	}
	d.WriteString("\n")
}

func (d *doc) allocation() {
	d.heading("GPU allocation against demand")
	d.para("Each chart shows the whole cards a scheduler kept allocated (coloured) against demand, the whole cards " +
		"asked for by jobs submitted and not finished (grey, dashed), and the cluster's capacity (black): where the " +
		"coloured line stays below both the others, cards sat idle while work waited.")
	for _, s := range d.v.schedulers {
		d.image(d.v.allocationFile(s), "GPU allocation under "+s, "No cluster timeline was recorded for "+s+".")
		if n, ok := d.v.numbers(s); ok {
			d.para("%s kept %s of capacity allocated on average, and %s during the %s demand exceeded supply.",
				s, percent(n.Allocation), percent(n.AllocationContended), traceTime(n.ContendedSeconds))
		}
	}
}

func (d *doc) queues() {
	d.heading("Queues against their deserved share")
	d.para("Solid lines are each queue's whole cards allocated, dashed lines its deserved share in the same colour; " +
		"a solid line that stays far below its dashed one while the queue asks for more is a queue kept off its share. " +
		"A queue is held to its deserved share or what it asks for, whichever is less, within 10 %% of it or one of its gangs; " +
		"above it, it is off its share only while another queue of the model is short of its own by one of its gangs or more: until then it borrows " +
		"capacity no one else asks for (SPEC §3.3), such as another queue's idle guarantee.")
	if d.v.hidden > 0 {
		d.para("The %d queues that held and deserved the least card-time are added up as one grey line, \"other %d queues\".",
			d.v.hidden, d.v.hidden)
	}
	for _, s := range d.v.schedulers {
		d.image(d.v.queuesFile(s), "Queues under "+s, "No queue timeline was recorded for "+s+".")
		if n, ok := d.v.numbers(s); ok {
			d.para("%s", shareSentence(s, n))
		}
	}
}

// shareSentence says how far scheduler s kept queues from their shares.
func shareSentence(s string, n record.Numbers) string {
	off := "no queue stayed off its share for over 60 trace seconds"
	if n.OffShare > 0 {
		off = fmt.Sprintf("a queue stayed off its share for over 60 trace seconds %s, the longest for %s",
			plural(n.OffShare, "time", "times"), traceTime(n.MaxOffShareSeconds))
	}
	over := "no queue went above its capability"
	if n.CapabilityViolations > 0 {
		over = plural(n.CapabilityViolations, "queue and model pair", "queue and model pairs") + " went above the queue's capability"
	}
	return fmt.Sprintf("Under %s %s; %s of queue samples were within tolerance; %s.", s, off, percent(n.WithinShare), over)
}

func (d *doc) cdfs() {
	d.heading("Time from submit to min bound")
	d.image(WaitChartFile, "Time from submit to min bound", "No job reached min under any scheduler.")
	d.para("The further left a line, the sooner that scheduler's gangs had their min pods running; the legend says " +
		"how many of its jobs ever did (jobs that never did are not in the line).")
	d.percentiles("waited", func(n record.Numbers) [3]float64 { return [3]float64{n.WaitP50, n.WaitP90, n.WaitP99} })

	d.heading("Job completion time")
	d.image(JCTChartFile, "Job completion time", "No job finished under any scheduler.")
	d.para("Completion time runs from submit to the job's last pod done, so it adds waiting to running; the further " +
		"left a line, the sooner jobs finished.")
	d.percentiles("took", func(n record.Numbers) [3]float64 { return [3]float64{n.JCTP50, n.JCTP90, n.JCTP99} })
}

func (d *doc) percentiles(verb string, p func(record.Numbers) [3]float64) {
	for _, n := range d.v.run.Summary.Schedulers {
		q := p(n)
		fmt.Fprintf(d, "- %s: half the jobs %s at most %s, 90 %% at most %s, 99 %% at most %s.\n",
			n.Scheduler, verb, traceTime(q[0]), traceTime(q[1]), traceTime(q[2]))
	}
	if len(d.v.run.Summary.Schedulers) > 0 {
		d.WriteString("\n")
	}
}

func (d *doc) moves() {
	d.heading("Capacity moving between queues")
	d.image(MovesChartFile, "Capacity moved between queues", "No capacity moved between queues under any scheduler.")
	if !d.drawn[MovesChartFile] {
		return
	}
	d.para("Each step up is capacity taken from one queue and given to another on a node (an eviction, then a bind " +
		"of the other queue there); steep stretches are churn, and moves undone within 10 trace minutes count as back " +
		"and forth.")
	for _, s := range d.v.schedulers {
		moves := 0
		for _, m := range d.v.run.Moves {
			if m.Scheduler == s {
				moves++
			}
		}
		line := "- " + s + ": " + plural(moves, "move", "moves")
		if n, ok := d.v.numbers(s); ok {
			line += fmt.Sprintf(", %d back and forth", n.BackAndForth)
		}
		if pairs := movePairs(d.v.run.Moves, s, 3); pairs != "" {
			line += "; most moved: " + pairs
		}
		d.WriteString(line + ".\n")
	}
	d.WriteString("\n")
}

func (d *doc) gangs() {
	d.heading("Partial and stuck gangs")
	d.para("A partial gang had some but fewer than min pods running at once for longer than a bind takes; a stuck " +
		"gang never had min pods running together before the run ended.")
	for _, s := range d.v.schedulers {
		fates := jobFates(d.v.run.Jobs, s)
		partial, stuck := len(fates.partial), len(fates.stuck)
		if n, ok := d.v.numbers(s); ok {
			partial, stuck = n.PartialGangs, n.StuckGangs
		}
		line := fmt.Sprintf("- %s: %s, %s", s, plural(partial, "partial gang", "partial gangs"), plural(stuck, "stuck gang", "stuck gangs"))
		if len(fates.partial) > 0 {
			line += fmt.Sprintf("; partial: %s (longest %s of wall time below min)", list(fates.partial, 10), wallTime(fates.longestPartial))
		}
		if len(fates.stuck) > 0 {
			line += "; stuck: " + list(fates.stuck, 10)
		}
		d.WriteString(line + ".\n")
	}
	d.WriteString("\n")
}

func (d *doc) lost() {
	d.heading("Evictions and GPU-hours lost")
	d.para("GPU-hours lost are the work thrown away by pods evicted by the scheduler or stopped by the cluster " +
		"changing, with the work of members left waiting when a gang fell below min.")
	for _, s := range d.v.schedulers {
		fates := jobFates(d.v.run.Jobs, s)
		evicted, killed, lost := fates.evicted, fates.killed, fates.lost
		if n, ok := d.v.numbers(s); ok {
			evicted, killed, lost = n.Evictions, n.Killed, n.GPUHoursLost
		}
		line := fmt.Sprintf("- %s: %s evicted, %s stopped by the cluster changing, %s GPU-hours lost",
			s, plural(evicted, "pod", "pods"), plural(killed, "pod", "pods"), decimal(lost, 1))
		if len(fates.mostLost) > 0 {
			line += "; most by " + list(fates.mostLost, 5)
		}
		d.WriteString(line + ".\n")
	}
	d.WriteString("\n")
}

func (d *doc) alternatives() {
	d.heading("Pods naming card-model alternatives (`A|B`)")
	d.para("A pod may name card models it can use in order of preference; this is the share of those placed that " +
		"landed on their first choice.")
	for _, s := range d.v.schedulers {
		fates := jobFates(d.v.run.Jobs, s)
		share := -1.0
		if fates.alternatives > 0 {
			share = float64(fates.firstChoice) / float64(fates.alternatives)
		}
		if n, ok := d.v.numbers(s); ok {
			share = n.FirstChoice
		}
		if share < 0 {
			fmt.Fprintf(d, "- %s: no pod named alternatives.\n", s)
			continue
		}
		fmt.Fprintf(d, "- %s: %s on their first choice", s, percent(share))
		if fates.alternatives > 0 {
			fmt.Fprintf(d, " (%d of %s)", fates.firstChoice, plural(fates.alternatives, "pod", "pods"))
		}
		d.WriteString(".\n")
	}
	d.WriteString("\n")
}

func (d *doc) data() {
	d.heading("Data")
	d.para("The report is drawn from these files alone; `cardinal-sim report` draws it again from them.")
	fmt.Fprintf(d, "- [%s](%s): each scheduler's cluster over trace time, per queue and card model.\n", record.TimelineFile, record.TimelineFile)
	fmt.Fprintf(d, "- [%s](%s): each job's fate under each scheduler.\n", record.JobsFile, record.JobsFile)
	fmt.Fprintf(d, "- [%s](%s): capacity moved from one queue to another.\n", record.MovesFile, record.MovesFile)
	fmt.Fprintf(d, "- [%s](%s): the numbers above, the validity verdict and the checks.\n", record.SummaryFile, record.SummaryFile)
}
