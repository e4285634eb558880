package convert

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// sample is a small cluster and a day of mixed pods.
func sample() (nodes, pods string) {
	nodes = makeNodes().
		Add("G2", 3, 8, 96000, 393216).
		Add("T4", 6, 2, 104000, 524288).
		Add("P100", 2, 2, 64000, 262144).
		Add("V100M32", 2, 8, 96000, 786432).
		CSV()
	var b []*podB
	milli := []int{1000, 470, 230, 1000, 810, 320, 650, 460, 1000, 100}
	specs := []string{"", "T4", "", "V100M16|V100M32|V100M32", "P100|T4", "", "G2", "", "", "T4"}
	qos := []string{"LS", "BE", "Burstable", "Guaranteed", "LS", "BE", "LS", "BE", "LS", "BE"}
	for i := range 60 {
		p := makePod(fmt.Sprintf("openb-pod-%03d", i)).
			GPU(1, milli[i%10]).Spec(specs[i%10]).QoS(qos[i%10]).At(i * 600).Run(30 + i*211)
		if i%7 == 0 {
			p.GPU([]int{2, 4, 8}[i%3], 1000).Spec("")
		}
		if i%11 == 0 {
			p.GPU(0, 0)
		}
		b = append(b, p)
	}
	return nodes, podsCSV(b...)
}

func TestSameSeedSameTrace(t *testing.T) {
	nodes, pods := sample()
	a := yamlOf(t, mustConvert(t, nodes, pods, opts(nil)))
	b := yamlOf(t, mustConvert(t, nodes, pods, opts(nil)))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two conversions with one seed differ (-first +second):\n%s", diff)
	}
}

func TestOtherSeedOtherQueues(t *testing.T) {
	nodes, pods := sample()
	queuesOf := func(seed uint64) []string {
		var out []string
		for _, j := range mustConvert(t, nodes, pods, opts(func(o *Options) { o.Seed = seed; o.Gangs = 0 })).Jobs {
			out = append(out, j.Queue)
		}
		return out
	}
	if cmp.Equal(queuesOf(1), queuesOf(2)) {
		t.Errorf("seeds 1 and 2 put every job in the same queue")
	}
}

func TestSkewFavoursTheFirstQueue(t *testing.T) {
	nodes, pods := sample()
	count := map[string]int{}
	for _, j := range mustConvert(t, nodes, pods, opts(func(o *Options) { o.Skew = 3; o.Gangs = 0 })).Jobs {
		count[j.Queue]++
	}
	if count["team-1"] <= count["team-2"]+count["team-3"]+count["team-4"] {
		t.Errorf("skew 3 gave queues %v, want most jobs in team-1", count)
	}
}

func TestRoundTripThroughDecode(t *testing.T) {
	nodes, pods := sample()
	want := mustConvert(t, nodes, pods, opts(nil))
	got, err := trace.Decode([]byte(yamlOf(t, want)))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(trace.Trace{})); diff != "" {
		t.Errorf("round trip (-converted +decoded):\n%s", diff)
	}
	checkPlaceable(t, got)
}

func TestSampleJobs(t *testing.T) {
	nodes, pods := sample()
	tr := mustConvert(t, nodes, pods, opts(nil))
	podCount := 0
	for _, j := range tr.Jobs {
		podCount += max(j.Pods, 1)
		if j.Preemptibility != "preemptible" {
			t.Errorf("job %s is %s", j.Name, j.Preemptibility)
		}
		if !strings.HasPrefix(j.Name, "p-") && !strings.HasPrefix(j.Name, "g-") {
			t.Errorf("job name %s", j.Name)
		}
	}
	// 60 pods, 6 of them CPU-only (0, 11, …, 55); the 8-card pods that may
	// use any model fit G2 or V100M32.
	if podCount != 54 {
		t.Errorf("%d pods in jobs, want 54", podCount)
	}
	if !strings.Contains(tr.About, "The 6 CPU-only pods (num_gpu 0) are left out") {
		t.Errorf("About does not count the CPU-only pods:\n%s", tr.About)
	}
	prio := map[string]int32{}
	for _, j := range tr.Jobs {
		prio[j.Name] = j.Priority
	}
	for name, want := range map[string]int32{"p-001": 0, "p-002": 500, "p-003": 500, "p-004": 1000} {
		if got, ok := prio[name]; ok && got != want {
			t.Errorf("job %s priority %d, want %d", name, got, want)
		}
	}
	checkPlaceable(t, tr)
}

func TestOptionsFlags(t *testing.T) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{"--queues=6", "--gangs=0.1", "--seed=9", "--card-memory=G2=24576,H20=98304", "--priority=BE=10", "--gang-window=30m"})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	want.Queues, want.Gangs, want.Seed, want.GangWindow = 6, 0.1, 9, 30*time.Minute
	want.CardMemoryMiB["G2"], want.CardMemoryMiB["H20"] = 24576, 98304
	want.Priorities["BE"] = 10
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if DefaultCardMemoryMiB["G2"] != 16384 {
		t.Errorf("--card-memory changed the package's default table")
	}
	bad := DefaultOptions()
	bad.Queues, bad.Load, bad.MaxGangSize = 0, 0, 1
	for _, f := range []string{"--queues", "--load", "--max-gang-size"} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate() = %v, want an error naming %s", err, f)
		}
	}
}

func TestRealTrace(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "traces", "openb-2023")
	nodesPath := filepath.Join(dir, "openb_node_list_gpu_node.csv")
	podsPath := filepath.Join(dir, "openb_pod_list_gpuspec33.csv")
	for _, p := range []string{nodesPath, podsPath} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("the openb-2023 trace is not here: %v", err)
		}
	}
	tr, err := ConvertFiles(nodesPath, podsPath, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	nodes, cards := 0, 0
	for _, g := range tr.Nodes {
		nodes += g.Count
		cards += g.Count * g.Cards
	}
	pods := 0
	for _, j := range tr.Jobs {
		pods += max(j.Pods, 1)
	}
	// One pod asks for 8 G2 cards and 120 cores; G2 nodes have 96: it fits
	// no node of the source's cluster either, and is left out, as About says.
	left := 0
	if m := regexp.MustCompile(`exceed every such node\): (\d+) pods?\.`).FindStringSubmatch(tr.About); m != nil {
		left, _ = strconv.Atoi(m[1])
	}
	if nodes != 1213 || cards != 6212 || pods+left != 8152-1088 || left != 1 {
		t.Errorf("%d nodes, %d cards, %d pods in jobs and %d left out; want 1213, 6212, %d in all and 1 left out",
			nodes, cards, pods, left, 8152-1088)
	}
	if tr.Name != "openb-2023-gpuspec33" {
		t.Errorf("name %q", tr.Name)
	}
	// Convert validates what it returns as trace.Decode does; the round
	// trip through YAML is tested on the sample, as it takes seconds here.
	checkPlaceable(t, tr)
	t.Logf("%d node groups, %d jobs\n%s", len(tr.Nodes), len(tr.Jobs), tr.About)
}
