package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

// render writes the report: where and when it ran, one row per workload and
// scheduler, Cardinal's plugin timings, and the ratios the project tracks.
func render(mode, root string, results []result, plugins []pluginBench) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`go run ./cmd/bench --mode %s`); do not edit by hand.\n\n", mode)
	fmt.Fprintf(&b, "- date: %s\n- commit: %s\n- machine: %s\n- mode: %s\n\n", time.Now().UTC().Format(time.RFC3339), commit(root), machine(), mode)
	runs := 1
	if len(results) > 0 {
		runs = results[0].Runs
	}
	b.WriteString("Each scheduler runs as a process against a fresh etcd and kube-apiserver (serving with API Priority and Fairness, as in a cluster) with the same simulated nodes and pods, created before it starts. ")
	b.WriteString("Pods/s is bound pods over the time from the scheduler's `/readyz` answering ok to the last bind. Attempt percentiles are kube-scheduler's `scheduler_scheduling_attempt_duration_seconds` for scheduled pods: from the pod's pop to its bind, so they include the wait at Permit and the Bind call to the API server. The algorithm p99 (`scheduler_scheduling_algorithm_duration_seconds`, PreFilter to Score) is the scheduler's own work on a pod; the Bind mean (`scheduler_framework_extension_point_duration_seconds`, whose buckets end below the tail) is the wait for the API server's answer to the binding, which grows as pods are scheduled faster than it binds them. ")
	b.WriteString("CPU ms per pod is the CPU time the scheduler, and etcd with kube-apiserver, used from the scheduler being ready to the end, per bound pod: all three share the machine's cores, so what a scheduler makes the apiserver do slows it too. ")
	fmt.Fprintf(&b, "`default` is kube-scheduler's default profile in the same binary. Each row is the median of %d runs, the contenders taking turns; only ratios from one report mean anything: the machine is shared.\n\n", runs)
	b.WriteString("Where the time goes now, what was tried and dropped, and what is left: [performance.md](performance.md).\n\n")

	byKey := map[string]result{}
	for _, r := range results {
		byKey[r.Workload+"/"+r.Scheduler] = r
	}
	b.WriteString("| workload | scheduler | pods | bound | pods/s | attempt p50 ms | attempt p99 ms | algorithm p99 ms | Bind mean ms | partial gangs | scheduler CPU ms/pod | etcd+apiserver CPU ms/pod | pods/s vs default |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		if r.Interleaved != nil {
			continue
		}
		vs := "-"
		if d, ok := byKey[r.Workload+"/default"]; ok && r.Scheduler != "default" && d.PodsPerSecond > 0 {
			vs = fmt.Sprintf("%.2f", r.PodsPerSecond/d.PodsPerSecond)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %.2f | %.2f | %s |\n", r.Workload, r.Scheduler, r.Pods, r.Bound, r.PodsPerSecond, r.AttemptP50, r.AttemptP99, r.AlgorithmP99, r.BindMean, r.PartialGangs, r.SchedulerCPU, r.ControlPlaneCPU, vs)
	}

	renderInterleaved(&b, results)

	if err := renderPreemption(&b, results); err != nil {
		return "", err
	}
	renderReclaim(&b, results)

	b.WriteString("\n## Cardinal's plugins, p99 per call (ms)\n\nFrom `scheduler_plugin_execution_duration_seconds`, which kube-scheduler samples (about one cycle in ten).\n\n")
	points := map[string]bool{}
	for _, r := range results {
		for k := range r.PluginP99 {
			points[k] = true
		}
	}
	cols := make([]string, 0, len(points))
	for k := range points {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	b.WriteString("| workload | " + strings.Join(cols, " | ") + " |\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, r := range results {
		if r.Scheduler != "cardinal" {
			continue
		}
		row := []string{r.Workload}
		for _, c := range cols {
			if v, ok := r.PluginP99[c]; ok {
				row = append(row, fmt.Sprintf("%.3f", v))
			} else {
				row = append(row, "-")
			}
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}

	b.WriteString("\n## Filter + Reserve per call, in process\n\n`go test -bench BenchmarkFilterReserve ./pkg/cardquota`: one card-quota Filter and the scheduling state's Reserve charge of a one-card pod, each queue holding pods of four models.\n\n")
	b.WriteString("| queues | mean ns | p99 ns |\n|---|---|---|\n")
	p99At := map[int]float64{}
	for _, p := range plugins {
		fmt.Fprintf(&b, "| %d | %.0f | %.0f |\n", p.Queues, p.NsPerOp, p.P99)
		p99At[p.Queues] = p.P99
	}

	b.WriteString("\n## Ratios\n\n")
	ratio := func(what string, num, den float64, target string) {
		if den <= 0 {
			fmt.Fprintf(&b, "- %s: not measured\n", what)
			return
		}
		fmt.Fprintf(&b, "- %s: **%.2f** (target %s)\n", what, num/den, target)
	}
	pps := func(key string) float64 { return byKey[key].PodsPerSecond }
	ratio("Cardinal / default, plain pods", pps("plain-pods/cardinal"), pps("plain-pods/default"), "≥ 0.95")
	ratio("Cardinal gangs of 8 / Cardinal plain pods", pps("gangs-of-8/cardinal"), pps("plain-pods/cardinal"), "≥ 0.9")
	ratio("Cardinal / default, gangs of 8", pps("gangs-of-8/cardinal"), pps("gangs-of-8/default"), "-")
	ratio("Cardinal, Jobs of 8 grouped by Cardinal / the same gangs with hand-written PodGroups (pods/s)",
		pps("jobs-of-8-grouped/cardinal"), pps("jobs-of-8-podgroups/cardinal"), "≥ 0.9")
	if r, ok := byKey["contended/cardinal"]; ok {
		fmt.Fprintf(&b, "- contended mix: Cardinal bound %d of %d pods with **%d partial gangs** (target 0); the default profile, which knows no gangs, left %d partial\n",
			r.Bound, r.Pods, r.PartialGangs, byKey["contended/default"].PartialGangs)
	}
	if r, ok := byKey["contended/scheduler-plugins"]; ok {
		ratio("Cardinal / scheduler-plugins, contended mix (pods/s)", pps("contended/cardinal"), r.PodsPerSecond, "-")
		fmt.Fprintf(&b, "- contended mix: scheduler-plugins bound %d of %d pods with %d partial gangs\n", r.Bound, r.Pods, r.PartialGangs)
	}
	ratio("Cardinal gangs of 8 / scheduler-plugins gangs of 8 (pods/s)", pps("gangs-of-8/cardinal"), pps("gangs-of-8/scheduler-plugins"), "> 1")
	ratio("Cardinal gangs of 1000 / Cardinal plain pods", pps("gangs-of-1000/cardinal"), pps("plain-pods/cardinal"), "≥ 0.8")
	ratio("Cardinal gang-member attempt p99 / plain-pod attempt p99", byKey["gangs-of-8/cardinal"].AttemptP99, byKey["plain-pods/cardinal"].AttemptP99, "≤ 2")
	for _, q := range []int{10, 20, 100, 1000} {
		w := fmt.Sprintf("cards-%dq", q)
		ratio(fmt.Sprintf("Cardinal / default, cards over %d queues (pods/s)", q), pps(w+"/cardinal"), pps(w+"/default"), "≥ 0.95")
	}
	for _, q := range []int{100, 1000} {
		w := fmt.Sprintf("cards-%dq", q)
		ratio(fmt.Sprintf("Cardinal / default, card pods' attempt p99, cards over %d queues", q), byKey[w+"/cardinal"].AttemptP99, byKey[w+"/default"].AttemptP99, "≤ 2")
		ratio(fmt.Sprintf("Cardinal / default, card pods' algorithm p99, cards over %d queues", q), byKey[w+"/cardinal"].AlgorithmP99, byKey[w+"/default"].AlgorithmP99, "-")
	}
	if _, ok := byKey["cards-100q-affinity/default"]; ok { // full mode only
		ratio("Cardinal / default given the same model preference as node affinity, cards over 100 queues (pods/s)",
			pps("cards-100q-affinity/cardinal"), pps("cards-100q-affinity/default"), "-")
	}
	if _, ok := byKey["cards-100q-any/default"]; ok { // full mode only
		ratio("Cardinal / default, cards over 100 queues, pods that name no model (pods/s)",
			pps("cards-100q-any/cardinal"), pps("cards-100q-any/default"), "≥ 0.95")
	}
	for _, w := range []string{"cards-100q", "cards-100q-affinity"} {
		if c, d := byKey[w+"/cardinal"].FirstModelFill, byKey[w+"/default"].FirstModelFill; c != nil && d != nil {
			fmt.Fprintf(&b, "- %s: the first card-name alternative's nodes filled to %.0f%% by Cardinal, %.0f%% by the default profile (100%%: packed onto them first)\n",
				w, 100**c, 100**d)
		}
	}
	if c, ok := byKey["interleaved/cardinal"]; ok && c.Interleaved != nil {
		if p, ok := byKey["interleaved/scheduler-plugins"]; ok && p.Interleaved != nil {
			ratio("Cardinal / scheduler-plugins, interleaved (whole gangs per minute)", c.Interleaved.PerMinute, p.Interleaved.PerMinute, "≥ 3")
		}
		fmt.Fprintf(&b, "- interleaved: Cardinal left **%d partial** and **%d stuck** gangs (target 0 and 0)\n", c.Interleaved.Partial, c.Interleaved.Stuck)
	}
	if r, ok := byKey["reclaim-storm/cardinal"]; ok && r.Reclaim != nil {
		rr := r.Reclaim
		fmt.Fprintf(&b, "- reclaim storm (%d cards): B at its share after **%.1f s** (target ≤ 60; 0: not reached), **%d** reclaimed beyond the share, **%d** back and forth, **%d** partial gangs (targets 0)\n",
			rr.Cards, rr.ToShare.Seconds(), rr.Beyond, rr.BackAndForth, rr.PartialGangs)
	}
	ratio("Filter+Reserve p99, 1000 queues / 10 queues", p99At[1000], p99At[10], "≤ 1.2")
	return b.String(), nil
}

// renderInterleaved writes the interleaved workload's numbers: whole gangs
// run per minute is what users of a busy cluster wait on.
func renderInterleaved(b *strings.Builder, results []result) {
	var rows []result
	for _, r := range results {
		if r.Interleaved != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Interleaved gangs\n\n")
	fmt.Fprintf(b, "Gangs of 2, 4, 8 or 16 pods of 1 or 2 GPUs arrive while the scheduler runs, in a random order (seed %d) over %s, asking in all for twice the cluster's GPUs. ", interleavedSeed, arrivalWindow)
	fmt.Fprintf(b, "A gang runs %s once its min is bound, then completes (its pods are deleted), freeing room for the gangs waiting. One gang in %d asks for more GPUs per pod than a node has and can never run. ", runFor, neverFitEvery)
	b.WriteString("Whole gangs per minute count gangs that fit, from the scheduler being ready to the last such gang's min bound, or to the end of the run (5 minutes; short: 2) if some never ran. A gang is partial if some but fewer than min of its pods are bound for over a second; stuck if it fits but did not run within the run. The default profile knows no gangs.\n\n")
	b.WriteString("| scheduler | gangs | fit | ran | whole gangs/min | arrival to min bound p50 ms | p99 ms | partial | stuck | scheduler CPU ms/pod |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		ir := r.Interleaved
		fmt.Fprintf(b, "| %s | %d | %d | %d | %.1f | %.0f | %.0f | %d | %d | %.2f |\n", r.Scheduler, ir.Gangs, ir.Fit, ir.Ran, ir.PerMinute, ir.WaitP50, ir.WaitP99, ir.Partial, ir.Stuck, r.SchedulerCPU)
	}
}

// renderReclaim writes the reclaim storm's numbers.
func renderReclaim(b *strings.Builder, results []result) {
	var rows []result
	for _, r := range results {
		if r.Reclaim != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\n## Reclaim storm\n\n")
	b.WriteString("Queue A holds every card before the scheduler starts, all of it borrowed: on half the nodes 8 single pods, on the other half an elastic gang of 8 with min 4, every pod preemptible. ")
	b.WriteString("Once the scheduler is ready, queue B, of the same weight, asks for as many cards as the cluster has (half in single pods, half in gangs of 8 with min 8), and A for a quarter more. Each deserves half. ")
	b.WriteString("Time is from B's first pod created to B holding its share. Reclaimed are A's pods evicted for B, beyond the share those B's share did not need; within A, A's elastic pods evicted for A's own waiting pods (a min before elastic pods, SPEC §5.4). ")
	b.WriteString("Back and forth counts B's pods evicted and A's waiting pods placed beyond the room A's own evictions made. The default profile has no queues and would not reclaim between pods of one priority.\n\n")
	b.WriteString("| scheduler | cards | B's share | time to share | settled after | reclaimed | beyond the share | evicted within A | back and forth | A holds | B holds | partial gangs | scheduler CPU ms/pod |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		rr := r.Reclaim
		to := "not reached"
		if rr.ToShare > 0 {
			to = fmt.Sprintf("%.1f s", rr.ToShare.Seconds())
		}
		fmt.Fprintf(b, "| %s | %d | %d | %s | %.1f s | %d | %d | %d | %d | %d | %d | %d | %.2f |\n", r.Scheduler, rr.Cards, rr.Share, to, rr.Settled.Seconds(),
			rr.Reclaimed, rr.Beyond, rr.WithinA, rr.BackAndForth, rr.HeldA, rr.HeldB, rr.PartialGangs, r.SchedulerCPU)
	}
}

// renderPreemption writes the preemption workload's own numbers: gangs, not
// pods, are what a preempting user waits for.
func renderPreemption(b *strings.Builder, results []result) error {
	var rows []result
	var def *preemptResult
	for _, r := range results {
		if r.Preempt != nil {
			rows = append(rows, r)
			if r.Scheduler == "default" {
				def = r.Preempt
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	b.WriteString("\n## Preemption\n\n")
	b.WriteString("Every node starts full of low-priority (preemptible) work, bound before the scheduler starts, in thirds: an elastic gang of 8 one-card pods with min 4, 8 single pods, or a rigid gang of 8 with min 8. ")
	b.WriteString("Once the scheduler is ready, the high-priority gangs of 8 one-card pods arrive. Time is from a gang's arrival to its min bound; ")
	b.WriteString("low-priority gangs left below min are victims' gangs with some but fewer than their min pods left. The default profile preempts pod by pod, knowing no gangs.\n\n")
	b.WriteString("| scheduler | gangs bound | gangs/s | p50 ms | p99 ms | evictions | evictions per gang | low-priority gangs left below min | gangs/s vs default |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		pr := r.Preempt
		vs := "-"
		if def != nil && r.Scheduler != "default" && def.GangsPerSecond > 0 {
			vs = fmt.Sprintf("%.2f", pr.GangsPerSecond/def.GangsPerSecond)
		}
		fmt.Fprintf(b, "| %s | %d/%d | %.2f | %.0f | %.0f | %d | %.1f | %d | %s |\n",
			r.Scheduler, pr.GangsBound, pr.Gangs, pr.GangsPerSecond, pr.P50, pr.P99, pr.Evictions, pr.EvictionsPerGang, pr.PartialVictimGang, vs)
	}
	return nil
}

func commit(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// machine describes where the run happened.
func machine() string {
	model := ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	return fmt.Sprintf("%d CPUs (%s), %s/%s, %s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
