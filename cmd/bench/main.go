// Command bench measures Cardinal's scheduling speed side by side with
// kube-scheduler's default profile, on the same control plane binaries and
// the same workloads, and writes docs/benchmarks.md (`make bench`).
//
// Every scheduler runs as a process, as a user runs it, against a fresh
// etcd and kube-apiserver with simulated nodes. Each workload's objects are
// created first; then the scheduler starts, and the run measures pods per
// second from the scheduler being ready to the last bind, and reads the scheduler's own
// metrics: scheduling_attempt_duration percentiles and each Cardinal
// plugin's execution time, the numbers kube-scheduler's scheduler_perf
// reports. Only ratios measured in the same run are meaningful: this
// machine is shared and noisy.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cardinal.dev/cardinal/pkg/contenders"
	"cardinal.dev/cardinal/pkg/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	mode := flag.String("mode", "short", "short (a few minutes) or full (the sizes results are quoted at)")
	out := flag.String("out", "docs/benchmarks.md", "where to write the report")
	only := flag.String("workloads", "", "comma-separated workload names to run (default all)")
	profile := flag.String("profile", "", "write a CPU profile of each Cardinal run into this directory")
	flag.IntVar(&profileSeconds, "profile-seconds", 10, "how long each --profile CPU profile runs, from the scheduler being ready")
	runs := flag.Int("runs", 0, "runs of each workload per scheduler, the median reported (default 3 in full mode, 1 in short)")
	requests := flag.Bool("requests", false, "print the writes each run made to kube-apiserver, by verb, resource and code")
	peer := flag.Bool("peer", true, "also run scheduler-plugins' Coscheduling + CapacityScheduling (bin/scheduler-plugins-scheduler)")
	flag.Parse()
	if *mode != "short" && *mode != "full" {
		return fmt.Errorf("--mode must be short or full, got %q", *mode)
	}
	if *runs <= 0 {
		*runs = 1
		if *mode == "full" {
			*runs = 3
		}
	}
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "cardinal-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(root, "bin")
	if dir := os.Getenv("CARDINAL_BIN_DIR"); dir != "" {
		bin = dir
	}
	names := []string{contenders.Default, contenders.Cardinal}
	if *peer {
		names = append(names, contenders.SchedulerPlugins)
	}
	schedulers, err := contenders.Setup(root, bin, dir, names)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var results []result
	var selected []workload
	for _, w := range workloads(*mode) {
		if *only == "" || slices.Contains(strings.Split(*only, ","), w.Name) {
			selected = append(selected, w)
		}
	}
	for len(selected) > 0 {
		// The contenders take turns, run after run, so that the machine's
		// load over time weighs on each alike; so do workloads whose
		// results are compared (Turns).
		n := 1
		for n < len(selected) && selected[0].Turns != "" && selected[n].Turns == selected[0].Turns {
			n++
		}
		batch := selected[:n]
		selected = selected[n:]
		all := map[string][]result{} // by workload and scheduler
		for run := range *runs {
			for _, w := range batch {
				for _, s := range schedulers {
					if (s.Peer && !w.Peer) || (w.CardinalOnly && s.Name != "cardinal") {
						continue
					}
					fmt.Printf("%-16s %-17s run %d/%d: ", w.Name, s.Name, run+1, *runs)
					r, err := runOne(ctx, root, w, s, *profile, *requests)
					if err != nil {
						return fmt.Errorf("%s with %s: %w", w.Name, s.Name, err)
					}
					printRun(r)
					all[w.Name+"/"+s.Name] = append(all[w.Name+"/"+s.Name], r)
				}
			}
		}
		for _, w := range batch {
			for _, s := range schedulers {
				if rs := all[w.Name+"/"+s.Name]; len(rs) > 0 {
					results = append(results, median(rs))
				}
			}
		}
	}
	fmt.Println("Filter + Reserve in process (go test -bench BenchmarkFilterReserve ./pkg/cardquota)")
	plugins, err := runPluginBench(root)
	if err != nil {
		return err
	}
	report, err := render(*mode, root, results, plugins)
	if err != nil {
		return err
	}
	path := *out
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", *out)
	return nil
}

func printRun(r result) {
	fmt.Printf("%d/%d bound, %.0f pods/s, first bind after %d ms, attempt p99 %.2f ms (algorithm p99 %.2f, Bind mean %.2f), partial gangs %d, CPU ms per pod: scheduler %.2f, etcd+apiserver %.2f\n",
		r.Bound, r.Pods, r.PodsPerSecond, r.FirstBind.Milliseconds(), r.AttemptP99, r.AlgorithmP99, r.BindMean, r.PartialGangs, r.SchedulerCPU, r.ControlPlaneCPU)
	if r.FirstModelFill != nil {
		fmt.Printf("%4sfirst card-name alternative's nodes filled to %.0f%%\n", "", 100**r.FirstModelFill)
	}
	if pr := r.Preempt; pr != nil {
		fmt.Printf("%4s%d/%d gangs bound, %.2f gangs/s, arrival to min bound p50 %.0f ms p99 %.0f ms, %d evictions (%.1f per gang), %d low-priority gangs left below min\n",
			"", pr.GangsBound, pr.Gangs, pr.GangsPerSecond, pr.P50, pr.P99, pr.Evictions, pr.EvictionsPerGang, pr.PartialVictimGang)
	}
	if rr := r.Reclaim; rr != nil {
		fmt.Printf("%4sB at its share (%d of %d cards) after %s, settled after %s, %d reclaimed (%d beyond the share), %d evicted within A, %d back and forth, A holds %d, B holds %d, %d partial gangs\n",
			"", rr.Share, rr.Cards, rr.ToShare.Round(time.Millisecond), rr.Settled.Round(time.Millisecond), rr.Reclaimed, rr.Beyond, rr.WithinA, rr.BackAndForth, rr.HeldA, rr.HeldB, rr.PartialGangs)
	}
	if ir := r.Interleaved; ir != nil {
		fmt.Printf("%4s%d of %d gangs that fit ran (%d gangs), %.1f whole gangs/min, arrival to min bound p50 %.0f ms p99 %.0f ms, %d stuck, %d partial\n",
			"", ir.Ran, ir.Fit, ir.Gangs, ir.PerMinute, ir.WaitP50, ir.WaitP99, ir.Stuck, ir.Partial)
	}
}

// median is the run with the median rate of what the workload measures:
// whole gangs per minute, preempting gangs per second, or pods per second.
// Its other numbers are reported with it, so a row is one real run.
func median(rs []result) result {
	rate := func(r result) float64 {
		switch {
		case r.Interleaved != nil:
			return r.Interleaved.PerMinute
		case r.Preempt != nil:
			return r.Preempt.GangsPerSecond
		}
		return r.PodsPerSecond
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b result) int { return cmp.Compare(rate(a), rate(b)) })
	m := sorted[len(sorted)/2]
	m.Runs = len(rs)
	return m
}
