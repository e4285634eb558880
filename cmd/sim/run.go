package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cardinal.dev/cardinal/pkg/contenders"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/pkg/sim/outcome"
	"cardinal.dev/cardinal/pkg/sim/record"
	"cardinal.dev/cardinal/pkg/sim/replay"
	"cardinal.dev/cardinal/pkg/sim/report"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "the trace file (YAML, SPEC §8)")
	names := fs.String("schedulers", strings.Join(contenders.Names, ","), "comma-separated schedulers to replay against: "+strings.Join(contenders.Names, ", "))
	k := fs.Float64("compress", 10, "K: trace seconds per wall second")
	out := fs.String("out", "", "directory for the report, timeline.csv, jobs.csv, moves.csv and summary.json")
	expect := fs.String("expect", "", "a YAML file of expected ranges per scheduler and metric; the run exits non-zero when a number falls outside one, or the run is not valid")
	sample := fs.Float64("sample", 0.2, "the share of the trace's arrivals replayed again at K and K/2 to check the compression (0: no check)")
	sampleWith := fs.String("sample-scheduler", contenders.Cardinal, "the scheduler the compression check replays the sample with")
	every := fs.Duration("sample-every", 0, "wall time between samples of the cluster (default: about 600 samples per run, at least 500ms)")
	stall := fs.Duration("stall", 2*time.Minute, "after the last arrival, end a run when nothing has bound, completed or stopped for this long (wall): what waits then is stuck")
	binDir := fs.String("bin-dir", "", "where cardinal-scheduler, kube-apiserver, etcd, kube-controller-manager and scheduler-plugins-scheduler are (default: beside cardinal-sim, else $CARDINAL_BIN_DIR, else bin/)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tracePath == "" || *out == "" {
		return fmt.Errorf("run needs --trace and --out")
	}
	if *k <= 0 {
		return fmt.Errorf("--compress must be more than 0, got %g", *k)
	}
	t, err := trace.Load(*tracePath)
	if err != nil {
		return err
	}
	var exp outcome.Expectations
	if *expect != "" {
		data, err := os.ReadFile(*expect)
		if err != nil {
			return err
		}
		if exp, err = outcome.ParseExpectations(data); err != nil {
			return fmt.Errorf("%s: %w", *expect, err)
		}
	}
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return err
	}
	bin := findBinDir(*binDir, root)
	tmp, err := os.MkdirTemp("", "cardinal-sim-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	schedulers, err := contenders.Setup(root, bin, tmp, strings.Split(*names, ","))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	jobs := t.Expanded()
	if len(jobs) == 0 {
		return fmt.Errorf("%s has no jobs", *tracePath)
	}
	span := jobs[len(jobs)-1].Submit.Duration
	if *every == 0 {
		*every = max(500*time.Millisecond, time.Duration(float64(span)/(*k)/600))
	}
	run := &record.Run{Summary: record.Summary{Trace: orDefault(t.Name, filepath.Base(*tracePath)), About: t.About, Compression: *k, Started: time.Now().UTC()}}
	writeErrors := map[string]int{}
	for _, s := range schedulers {
		res, err := replay.Run(ctx, replay.Options{Trace: t, Scheduler: s, Root: root, BinDir: bin, Compression: *k,
			SampleEvery: *every, Stall: *stall, Log: os.Stdout})
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		n := outcome.Numbers(s.Name, res.Timeline, res.Jobs, res.Moves, outcome.Measured{
			CreationLags: res.CreationLags, AttemptP99: res.AttemptP99, ShortestJob: shortest(jobs) / *k, Wall: res.Wall})
		printNumbers(n)
		run.Summary.Schedulers = append(run.Summary.Schedulers, n)
		run.Timeline = append(run.Timeline, res.Timeline...)
		run.Jobs = append(run.Jobs, res.Jobs...)
		run.Moves = append(run.Moves, res.Moves...)
		writeErrors[s.Name] = res.WriteErrors
	}
	var check *record.SampleCheck
	if *sample > 0 {
		if check, err = sampleCheck(ctx, t, jobs, *sample, *sampleWith, root, bin, tmp, *k, *stall); err != nil {
			return err
		}
	}
	run.Summary.Validity = outcome.Validity(run.Summary.Schedulers, writeErrors, check)
	if exp != nil {
		run.Summary.Checks = exp.Check(run.Summary.Schedulers)
	}
	if err := run.Write(*out); err != nil {
		return err
	}
	if err := report.Render(run, *out); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", filepath.Join(*out, "report.md"))
	return verdict(run.Summary, exp != nil)
}

// sampleCheck replays the first share of the trace's arrivals with one
// scheduler at K and at K/2: if the compression hides nothing, the two
// agree.
func sampleCheck(ctx context.Context, t *trace.Trace, jobs []trace.Job, share float64, name, root, bin, tmp string, k float64, stall time.Duration) (*record.SampleCheck, error) {
	n := max(1, int(float64(len(jobs))*share))
	sample := jobs[:n]
	schedulers, err := contenders.Setup(root, bin, tmp, []string{name})
	if err != nil {
		return nil, err
	}
	check := &record.SampleCheck{Scheduler: name, Jobs: n}
	sub := *t
	sub.Events = nil
	for _, e := range t.Events {
		if e.At.Duration <= sample[n-1].Submit.Duration {
			sub.Events = append(sub.Events, e)
		}
	}
	for i, kk := range []float64{k, k / 2} {
		fmt.Printf("compression check: %d jobs with %s at %gx\n", n, name, kk)
		res, err := replay.Run(ctx, replay.Options{Trace: &sub, Jobs: sample, Scheduler: schedulers[0], Root: root, BinDir: bin,
			Compression: kk, SampleEvery: 500 * time.Millisecond, Stall: stall})
		if err != nil {
			return nil, fmt.Errorf("compression check at %gx: %w", kk, err)
		}
		nums := outcome.Numbers(name, res.Timeline, res.Jobs, res.Moves, outcome.Measured{})
		if i == 0 {
			check.AllocationAtK, check.MeanJCTAtK = nums.Allocation, outcome.MeanJCT(res.Jobs)
		} else {
			check.AllocationAtHalfK, check.MeanJCTAtHalfK = nums.Allocation, outcome.MeanJCT(res.Jobs)
		}
	}
	outcome.Agree(check)
	return check, nil
}

// verdict prints whether the run is valid and met its expectations, and
// fails when expectations were given and it did not.
func verdict(s record.Summary, expected bool) error {
	if s.Validity.Valid {
		fmt.Println("the run is valid")
	} else {
		fmt.Println("the run is NOT valid:")
		for _, r := range s.Validity.Reasons {
			fmt.Println("  -", r)
		}
	}
	failed := 0
	for _, c := range s.Checks {
		if !c.OK {
			failed++
			fmt.Printf("  outside its range: %s %s = %g (%s)\n", c.Scheduler, c.Metric, c.Value, rangeString(c.Range))
		}
	}
	if expected && (failed > 0 || !s.Validity.Valid) {
		return fmt.Errorf("%w: %d of %d checks failed, valid=%t", errExpectations, failed, len(s.Checks), s.Validity.Valid)
	}
	return nil
}

func rangeString(r record.Range) string {
	switch {
	case r.Min != nil && r.Max != nil:
		return fmt.Sprintf("want %g to %g", *r.Min, *r.Max)
	case r.Min != nil:
		return fmt.Sprintf("want at least %g", *r.Min)
	default:
		return fmt.Sprintf("want at most %g", *r.Max)
	}
}

func printNumbers(n record.Numbers) {
	fmt.Printf("%s: %d/%d jobs done in %.0f s wall; cards allocated %.1f %% (%.1f %% while demand exceeded supply, %.0f s); "+
		"partial gangs %d, stuck %d; capability violations %d; off share %d (longest %.0f s); back and forth %d of %d moves; "+
		"evictions %d, killed %d, GPU-hours lost %.1f; wait p50 %.0f s p99 %.0f s; JCT p50 %.0f s p99 %.0f s; first choice %.1f %%\n",
		n.Scheduler, n.Completed, n.Jobs, n.WallSeconds, 100*n.Allocation, 100*n.AllocationContended, n.ContendedSeconds,
		n.PartialGangs, n.StuckGangs, n.CapabilityViolations, n.OffShare, n.MaxOffShareSeconds, n.BackAndForth, n.Moves,
		n.Evictions, n.Killed, n.GPUHoursLost, n.WaitP50, n.WaitP99, n.JCTP50, n.JCTP99, 100*n.FirstChoice)
}

func shortest(jobs []trace.Job) float64 {
	s := jobs[0].Duration.Seconds()
	for _, j := range jobs {
		s = min(s, j.Duration.Seconds())
	}
	return s
}

// findBinDir is --bin-dir, else the directory cardinal-sim runs from when
// the scheduler is beside it, else $CARDINAL_BIN_DIR, else root's bin/.
func findBinDir(flagged, root string) string {
	if flagged != "" {
		return flagged
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if _, err := os.Stat(filepath.Join(dir, "cardinal-scheduler")); err == nil {
			return dir
		}
	}
	if dir := os.Getenv("CARDINAL_BIN_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(root, "bin")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
