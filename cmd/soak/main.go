// Command soak runs Cardinal through seeded random runs with restarts,
// failovers and API faults on a local control plane (test/soak), and
// writes what it ran and found to docs/reliability.md.
//
//	go run ./cmd/soak                 # seeds 1..500
//	go run ./cmd/soak --seed 17 -v    # replay one seed, step by step
//
// A long run splits by seed range, each part writing its seeds' results
// to one directory, and the report adds them up:
//
//	go run ./cmd/soak --first 1 --seeds 250 --results out &
//	go run ./cmd/soak --first 251 --seeds 250 --results out
//	go run ./cmd/soak --report-from out
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/soak"
)

func main() {
	seeds := flag.Int("seeds", 500, "how many seeds to run, from --first")
	first := flag.Uint64("first", 1, "the first seed")
	one := flag.Uint64("seed", 0, "run only this seed (replay)")
	steps := flag.Int("steps", 25, "steps per seed")
	limit := flag.Duration("time", 0, "start no seed after this long (0: no bound)")
	out := flag.String("out", "docs/reliability.md", "where to write the report (\"\": nowhere)")
	verbose := flag.Bool("v", false, "print every step")
	raceEvery := flag.Uint64("race-every", 5, "run the seeds this divides with bin/cardinal-scheduler-race (0: none)")
	results := flag.String("results", "", "also write each seed's result to this directory, for --report-from")
	reportFrom := flag.String("report-from", "", "run nothing: write the report from the results in this directory")
	flag.Parse()
	if *one != 0 {
		*first, *seeds, *out = *one, 1, ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	if *reportFrom != "" {
		err = reportResults(*reportFrom, *out)
	} else {
		err = run(ctx, config{first: *first, seeds: *seeds, steps: *steps, limit: *limit, out: *out, results: *results, raceEvery: *raceEvery, verbose: *verbose})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type config struct {
	first        uint64
	seeds, steps int
	limit        time.Duration
	out, results string
	raceEvery    uint64
	verbose      bool
}

func run(ctx context.Context, c config) error {
	first, seeds, steps, limit, out, verbose := c.first, c.seeds, c.steps, c.limit, c.out, c.verbose
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return err
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Controllers: []string{"deployment-controller", "replicaset-controller"}})
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer cp.Stop()
	if err := cp.Install(ctx, filepath.Join(root, "config")); err != nil {
		return fmt.Errorf("installing config/: %w", err)
	}
	var log io.Writer
	if verbose {
		log = os.Stdout
	}
	opts := soak.Options{ControlPlane: cp, ConfigPath: filepath.Join(root, "config", "scheduler-config.yaml"), Steps: steps, Log: log,
		RestartAPIServer: true, RaceEvery: c.raceEvery}
	if c.raceEvery > 0 && (seeds > 1 || first%c.raceEvery == 0) {
		opts.RaceBinary = filepath.Join(cp.BinDir, "cardinal-scheduler-race")
		if _, err := os.Stat(opts.RaceBinary); err != nil {
			return fmt.Errorf("%s not found: run `make bin/cardinal-scheduler-race`, or --race-every 0", opts.RaceBinary)
		}
	}
	if c.results != "" {
		if err := os.MkdirAll(c.results, 0o755); err != nil {
			return err
		}
	}
	start := time.Now()
	var results []*soak.Result
	failed := 0
	for i := range seeds {
		if ctx.Err() != nil || limit > 0 && time.Since(start) > limit {
			break
		}
		seed := first + uint64(i)
		res, err := soak.Run(ctx, opts, seed)
		if err != nil {
			return fmt.Errorf("seed %d: %w (replay: go run ./cmd/soak --seed %d -v)", seed, err, seed)
		}
		results = append(results, res)
		if c.results != "" {
			if err := writeResult(c.results, res); err != nil {
				return err
			}
		}
		status := "ok"
		if len(res.Violations) > 0 {
			failed++
			status = fmt.Sprintf("%d VIOLATIONS, replay: go run ./cmd/soak --seed %d -v\n    %s", len(res.Violations), seed, strings.Join(res.Violations, "\n    "))
		}
		race := ""
		if res.Race {
			race = ", -race"
		}
		fmt.Printf("seed %d: %d steps, %d restarts, %d failovers, %d kube-apiserver restarts, %d faults%s, %s: %s\n",
			seed, res.Steps, res.Restarts, res.Failovers, res.APIRestarts, faults(res), race, res.Took.Round(time.Second), status)
	}
	if out != "" && c.results == "" {
		if err := writeReport(out, results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d seeds violated an invariant", failed, len(results))
	}
	return nil
}

func faults(r *soak.Result) int {
	n := 0
	for _, m := range r.Faults {
		for _, c := range m {
			n += c
		}
	}
	return n
}

// writeResult writes a seed's result as JSON to dir.
func writeResult(dir string, res *soak.Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d.json", res.Seed)), data, 0o644)
}

// reportResults writes the report from the results a split run wrote.
func reportResults(dir, out string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "seed-*.json"))
	if err != nil {
		return err
	}
	var results []*soak.Result
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var res soak.Result
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		results = append(results, &res)
	}
	if len(results) == 0 {
		return fmt.Errorf("no seed results in %s", dir)
	}
	slices.SortFunc(results, func(a, b *soak.Result) int { return cmp.Compare(a.Seed, b.Seed) })
	if out == "" {
		return nil
	}
	return writeReport(out, results)
}

func writeReport(out string, results []*soak.Result) error {
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.WriteFile(out, []byte(report(results)), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}

// report is docs/reliability.md.
// report is docs/reliability.md.
func report(results []*soak.Result) string {
	var b strings.Builder
	var took time.Duration
	races := 0
	steps := 0
	for _, r := range results {
		took += r.Took
		if r.Race {
			races++
		}
		steps = max(steps, r.Steps)
	}
	b.WriteString("# Reliability\n\nWritten by `make soak` (`go run ./cmd/soak`); do not edit by hand.\n\n")
	fmt.Fprintf(&b, "- date: %s\n- seeds: %d (seeds %d to %d, %d steps each; %d of them with the scheduler built with `-race`), %s of runs in all\n\n",
		time.Now().UTC().Format(time.RFC3339), len(results), results[0].Seed, results[len(results)-1].Seed, steps, races, took.Round(time.Second))
	b.WriteString(ran)
	var stepsRun, checks, restarts, failovers, apiRestarts, relabels, minChanges, violations int
	byFault := map[string]int{}
	byKind := map[string]int{}
	for _, r := range results {
		stepsRun += r.Steps
		checks += r.Checks
		restarts += r.Restarts
		failovers += r.Failovers
		apiRestarts += r.APIRestarts
		relabels += r.Relabels
		minChanges += r.MinChanges
		violations += len(r.Violations)
		for kind, m := range r.Faults {
			for f, n := range m {
				byFault[f] += n
				byKind[kind] += n
			}
		}
	}
	b.WriteString("| seeds | steps | invariant checks | scheduler kills | leader failovers | kube-apiserver restarts | running workloads relabelled | minMember changes | faults injected | violations |\n|---|---|---|---|---|---|---|---|---|---|\n")
	total := 0
	for _, n := range byFault {
		total += n
	}
	fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %d | %d | %d | **%d** |\n\n", len(results), stepsRun, checks, restarts, failovers, apiRestarts, relabels, minChanges, total, violations)
	b.WriteString("Faults by write and kind: ")
	b.WriteString(counts(byKind) + "; " + counts(byFault) + ".\n\n")
	b.WriteString(found)
	if violations > 0 {
		b.WriteString("## Violations\n\n")
		for _, r := range results {
			for _, v := range r.Violations {
				fmt.Fprintf(&b, "- seed %d: %s (replay: `go run ./cmd/soak --seed %d -v`)\n", r.Seed, v, r.Seed)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ran says what each seed does and checks.
const ran = `Each seed runs on the same local etcd, kube-apiserver and kube-controller-manager (Deployments and ReplicaSets): 2 to 4 queues with card quota (H200, A100, H200 MIG slices; some through the Volcano annotation), some serving only their team's namespaces (` + "`spec.namespaceSelector`" + `); 1 or 2 tenant namespaces, of a queue's team or of none, whose workloads name a queue by label, one they may use or not; 3 to 6 nodes; and one or two cardinal-scheduler replicas with leader election, reaching kube-apiserver through a proxy that delays and fails their binds, pod status patches, Queue and PodGroup status writes and pod deletions, fails and throttles their reads, and cuts their watches. Every fifth seed runs a scheduler built with ` + "`-race`" + `; every scheduler runs with ` + "`GOTRACEBACK=all`" + `. Pods have a grace period of 0, 2, 5 or 10 s, which the run's kubelet honours (a deleted or evicted pod ends once it is over), and some have a sidecar (a restartable init container) asking for a card besides the main container's.

Each step is one of: a gang with random [min, max], priority and preemptibility (from the PodGroup, the pod or the priority rule, sometimes invalid), of a queue's namespace or a tenant's; a single pod; a Deployment created or scaled; a workload deleted; a gang's pending pods deleted; a running workload relabelled to another queue (its pods or its PodGroup) or from preemptible to non-preemptible (its pods, its PodGroup, sometimes semi-preemptible, or the Deployment that owns them); a running gang's ` + "`minMember`" + ` raised or lowered, within its bound pods; a node removed (its workloads deleted, as their operators would) or added; a node re-sliced between whole cards and MIG; a scheduler killed with SIGKILL and another started; the leader killed; kube-apiserver restarted; the fault rate changed.

After every step, from the API and from what the run itself did (never from Cardinal's records): no queue above its capability per card model and cpu, counting bound pods, terminating ones too, each charged to the queue it was placed in whatever its labels say since; no pod bound that names a queue its namespace may not use; no queue's non-preemptible work (as placed: a relabel after placement does not count) above its guarantee of a card model; no gang bound below its min for longer than its Permit wait (10 s, or its PodGroup's ` + "`scheduleTimeoutSeconds`" + `, which some gangs set) plus 30 s; no non-preemptible pod evicted; no non- or semi-preemptible gang that reached its min below it again; no pod bound twice; no reclaim of a model by queue A from queue B after one by B from A with nothing changed between (SPEC §5.6); no second round of evictions for a preemptor that begins while a victim of its first round terminates (§5.8, from the rounds' ` + "`Preempting`" + ` events). At the end, with faults off and pending pods deleted: the leader's ` + "`cardinal_queue_card_allocated`" + ` and ` + "`cardinal_queue_allocated{resource=\"cpu\"}`" + `, and Queue status, equal a recount of bound pods; a plain pod that fits binds; no scheduler ended by itself; no data race in any scheduler's log.

`

// found lists the bugs the soak and the fuzz targets found, each with the
// test that now covers it.
const found = `## Bugs found, and the tests that now cover them

- **A pod that named no card model could land, unchecked, on a node Cardinal had not seen yet.** kube-scheduler's snapshot can hold a new node before Cardinal's informer delivers it; the card Filter found no models on it and let the pod through, and the queue went over its capability for that node's model (seed 8: a queue with H200 capability 0 held an H200 card after a node was added). The same held for a node the state had seen before it was re-sliced. The Filter now checks each request as the model it is charged as, refuses a node whose cards the scheduler's snapshot shows and the state does not yet, and the state's catching up wakes the pod; the shortcut for pods that PreFilter found every node passes no longer applies once nodes changed during the cycle. Tests: ` + "`TestFilterNodeNotSeenYet`" + ` (pkg/cardquota) and the soak seeds in ` + "`make test`" + `.
- **Two replicas on one host both acted as leader.** Cardinal's status writers judged leadership by the lease holder's host name, so with two replicas on one host both wrote Queue and PodGroup status and both served the scheduling state's metrics, the standby's numbers without the leader's reservations. Found building the soak's two-replica runs, which start both replicas on one host. They now start when kube-scheduler's own leader elector reports in the process's metrics that it leads. Tests: ` + "`TestLeadsHere`" + ` (pkg/controllers), ` + "`TestLeaderFailoverDuringAssembly`" + ` and the soak seeds in ` + "`make test`" + `.
- **A PodGroup's ` + "`scheduleTimeoutSeconds`" + ` was ignored.** SPEC §1.2 says Cardinal reads it; every gang waited at Permit for the configuration's ` + "`permitWaitingTimeSeconds`" + `. It now shortens the wait (it cannot lengthen it past the configuration's: gangs assemble one at a time). Found writing the soak's gang generator from SPEC §1.2. Tests: ` + "`TestPermitTimeoutFromPodGroup`" + ` (pkg/coscheduling), ` + "`TestScheduleTimeoutFromPodGroup`" + ` (real apiserver).
- **A kube-apiserver that failed to answer at start-up stopped the scheduler** (exit 1, "initializing plugin CardinalQueue: the request timed out"). Creating the default queue was the one API call made while the plugins were built, and any error but NotFound or Forbidden ended the process. Found by the soak's read faults on about one seed in twenty. A transient error is now logged and the queue is made in the background, with backoff. Test: ` + "`TestDefaultQueueRetried`" + ` (pkg/state).
- **After a restart, a relabelled pod moved to the queue its new labels named.** A bound pod whose namespace had not arrived yet was refused its ` + "`placed-as`" + ` queue (an unknown namespace matches no ` + "`namespaceSelector`" + `) and was booked by its labels (SPEC §3.7). Found by the soak (seed 201: a PodGroup relabelled to another queue, then a replica killed; the queues' numbers then differed from the API). Placements read before the state has synced are taken as written and judged as it becomes synced, uncharged as they were charged. Test: ` + "`TestPlacementReadBeforeNamespace`" + ` (pkg/state).
- **A pod of a non-preemptible Deployment could be placed as preemptible borrowed work** when its event reached the scheduler before its ReplicaSet's: its owner's ` + "`cardinal.dev/preemptibility`" + ` label was unknown, and a pod placed preemptible stays so (SPEC §3.7, §5.1). Found by the soak (seed 206: non-preemptible use above a queue's guarantee of 0). A pending pod whose owner has not been seen now waits, with a message naming it, and is woken when it is. Tests: ` + "`TestPendingPodWaitsForItsOwner`" + `, ` + "`TestOwnerSeenBeforeThePodWaited`" + ` (pkg/state), ` + "`TestClassifier`" + ` (pkg/workload).
- **A label flipped between PreFilter and Reserve was booked unchecked**: a pod checked as preemptible could be booked non-preemptible beyond its queue's guarantee, or in a queue its namespace may not use. Found by a review of the soak's findings as a hostile tenant would read them. Reserve now refuses a pod whose queue, right to its queue or preemptibility changed since PreFilter. Test: ` + "`TestReserveRefusesWhatWasNotChecked`" + ` (pkg/state).
- **The scheduler died at start-up with exit status 2, now and then** (seed 9 of an earlier run, seed 10 of a later one). The status writers' goroutine read klog's global logger while kube-scheduler's start-up was replacing it, without a lock, and got a nil logger. It now touches no logger before a plugin has attached the scheduling state, which happens after logging is set up. Test: ` + "`TestStartLeavesKlogAloneUntilAttached`" + ` (pkg/controllers; fails under ` + "`-race`" + ` without the fix).
- **One unreadable custom resource stopped all scheduling.** kube-scheduler starts an informer for every resource a plugin requeues on and schedules nothing, in any profile, until all have listed: with the PodGroup CRD missing, or its RBAC, no pod at all was scheduled and none was told why. Cardinal now leaves out the events of a resource it cannot list, reports the missing API in the log and on the pods that wait for it, and wakes them when it comes. Found writing the tests of SPEC §6. Tests: ` + "`TestMissingAPIsReported`" + `, ` + "`TestWithoutCRDs`" + ` (real apiserver), ` + "`TestMissingAPIs`" + ` (pkg/state).
- **A reserving replacement restarted a stale gang's clock, and a missing API's flag flapped.** The first made stale gangs (SPEC §2.6) never be given back; the second woke every waiting pod at each flap. Found by review of the stale-gang and missing-API changes. Tests: ` + "`TestStaleGangClock`" + `, ` + "`TestMissingAPIs`" + ` (pkg/state).
- **A victim's grace period of billions of seconds overflowed the wait for it**, putting its preemption's deadline in the past, so a second round of evictions could start at once (SPEC §5.8). The wait is now bounded by a day. Test: ` + "`TestGracePeriod`" + ` (pkg/state).
- **Quota was released when a pod's deletion started**, so a job with a long checkpoint grace period freed its cards at once and replacements pushed real use past capability. The first fix kept the terminating pod charged but also kept it ranked among its gang's min, so replacements created during the grace period were placed as elastic pods and bound one by one without waiting for the rest of their min; it was reverted. A terminating pod now keeps its charge until it is gone and leaves its gang's ranks at once (SPEC §3.7). Test: ` + "`TestTerminatingPodKeepsCharge`" + ` (pkg/state, and ` + "`/pod`" + ` and ` + "`/gang`" + ` on a real apiserver).
- **` + "`kubectl cardinal why`" + ` panicked on a pod bound to a node that is gone**: its snapshot made a node entry without a node. Test: ` + "`TestWhyWithAPodOnAGoneNode`" + ` (real apiserver).
- **A Permit wait above 9223372036 s was accepted and wrapped to a negative duration**, so every gang timed out at once. Found by ` + "`FuzzDecodeArgs`" + `. Validation now refuses it, naming the field. Test: ` + "`TestValidateArgs`" + `.

`

// counts writes m as "key n, ..." in key order.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
