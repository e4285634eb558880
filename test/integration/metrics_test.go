package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// cardinalFamilies are the metric families Cardinal serves (SPEC §6);
// histograms by their _count series.
var cardinalFamilies = []string{
	"cardinal_queue_allocated", "cardinal_queue_guarantee", "cardinal_queue_capability",
	"cardinal_queue_deserved", "cardinal_queue_pending", "cardinal_queue_borrowed",
	"cardinal_queue_card_allocated", "cardinal_queue_card_guarantee", "cardinal_queue_card_capability",
	"cardinal_queue_card_deserved", "cardinal_queue_card_pending", "cardinal_queue_card_borrowed",
	"cardinal_gangs", "cardinal_gangs_held", "cardinal_gang_longest_wait_seconds",
	"cardinal_gang_wait_seconds_count", "cardinal_admissions_held_total",
	"cardinal_node_card_models", "cardinal_nodes_unlabelled_cards",
	"cardinal_preemption_attempts_total", "cardinal_preemption_evictions_total",
	"cardinal_preemption_victims_count", "cardinal_preemption_attempt_duration_seconds_count",
}

// TestMetrics runs workloads like the demo's (a queue borrowing cards and
// cpu, a gang held by card quota, another queue reclaiming elastic pods,
// nodes with and without a card model) and scrapes the scheduler: every
// Cardinal metric family is served with at least one non-zero value, and
// the numbers after known placements are the placements'. Every metric the
// dashboard and alerts under config/monitoring/ query is served.
func TestMetrics(t *testing.T) {
	unlabelled := builder.MakeNode("met-u").Res("cpu", "1").Res(builder.GPUResource, "4").Obj()
	unlabelled.Spec.Unschedulable = true
	createNodes(t, append(gpuNodes("met", 2, 4), unlabelled)...)
	s := startScheduler(t, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")

	reclaimable := false
	a := builder.MakeQueue("met-a").Guarantee("cpu", "1").Capability("cpu", "64").Card(h200, 2, 8).Obj()
	a.Spec.Reclaimable = &reclaimable
	createQueue(t, a)
	nsA := createNamespaceInQueue(t, "met-a", "met-a")
	createQueue(t, builder.MakeQueue("met-b").Weight(3).Card(h200, 0, 8).Obj())
	nsB := createNamespaceInQueue(t, "met-b", "met-b")

	// Queue met-a: a gang of 2 with 6 elastic pods on all 8 cards, and a
	// cpu gang it never gives up (min only, queue not reclaimable).
	createPodGroup(t, nsA, "a", 2)
	createPods(t, gangPods(nsA, "a", 8, 1)...)
	createPodGroup(t, nsA, "w", 4)
	var w []*corev1.Pod
	for i := range 4 {
		w = append(w, builder.MakePod(nsA, "w-"+strconv.Itoa(i)).Label("scheduling.x-k8s.io/pod-group", "w").Req("cpu", "6").Obj())
	}
	createPods(t, w...)
	waitBound(t, nsA, gangsBound(map[string]int{"a": 8, "w": 4}))
	// Queue met-b: a gang whose min its card capability cannot hold.
	createPodGroup(t, nsB, "c", 9)
	var c []*corev1.Pod
	for i := range 9 {
		c = append(c, builder.MakePod(nsB, "c-"+strconv.Itoa(i)).Label("scheduling.x-k8s.io/pod-group", "c").Req("cpu", "20").GPU(1).CardName(h200).Obj())
	}
	createPods(t, c...)
	waitWaitingReason(t, nsB, "c", "is held")
	first := controlplane.Samples(scrapeMetrics(t, s))

	for _, want := range []struct {
		name, labels string
		value        float64
	}{
		{"cardinal_queue_card_allocated", `{model="NVIDIA-H200",queue="met-a"}`, 8},
		{"cardinal_queue_card_guarantee", `{model="NVIDIA-H200",queue="met-a"}`, 2},
		{"cardinal_queue_card_capability", `{model="NVIDIA-H200",queue="met-b"}`, 8},
		{"cardinal_queue_card_pending", `{model="NVIDIA-H200",queue="met-b"}`, 9},
		{"cardinal_queue_allocated", `{queue="met-a",resource="cpu"}`, 24.8},
		{"cardinal_queue_guarantee", `{queue="met-a",resource="cpu"}`, 1},
		{"cardinal_queue_capability", `{queue="met-a",resource="cpu"}`, 64},
		{"cardinal_queue_pending", `{queue="met-b",resource="cpu"}`, 180},
		{"cardinal_gangs_held", `{reason="card-quota"}`, 1},
		{"cardinal_node_card_models", `{model="NVIDIA-H200"}`, 2},
		{"cardinal_nodes_unlabelled_cards", "", 1},
	} {
		if got, ok := first[want.name][want.labels]; !ok || got != want.value {
			t.Errorf("%s%s = %v (served: %v), want %v", want.name, want.labels, got, ok, want.value)
		}
	}

	// Queue met-b reclaims the elastic pods of met-a for a gang of 4.
	createPodGroup(t, nsB, "b", 4)
	createPods(t, gangPods(nsB, "b", 4, 1)...)
	waitBound(t, nsB, gangsBound(map[string]int{"b": 4}))
	second := controlplane.Samples(scrapeMetrics(t, s))
	if got := second["cardinal_preemption_evictions_total"][`{reason="reclaim"}`]; got < 4 {
		t.Errorf("cardinal_preemption_evictions_total{reason=\"reclaim\"} = %v, want at least 4", got)
	}

	for _, name := range cardinalFamilies {
		nonZero := false
		for _, scrape := range []map[string]map[string]float64{first, second} {
			for _, v := range scrape[name] {
				nonZero = nonZero || v != 0
			}
		}
		if !nonZero {
			t.Errorf("%s: no non-zero value in either scrape (first %v, second %v)", name, first[name], second[name])
		}
	}
	var served []string
	for name := range second {
		if strings.HasPrefix(name, "cardinal_") {
			served = append(served, name)
		}
	}
	sort.Strings(served)
	t.Logf("cardinal metrics served: %s", strings.Join(served, " "))

	// Every metric config/monitoring/ queries is served.
	query := regexp.MustCompile(`cardinal_[a-z_]+`)
	for _, f := range []string{"dashboard.json", "prometheusrule.yaml"} {
		b, err := os.ReadFile(filepath.Join(env.root, "config", "monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range query.FindAllString(string(b), -1) {
			if _, ok := second[name]; !ok {
				if _, ok := second[name+"_count"]; !ok && !strings.HasSuffix(name, "_bucket") {
					t.Errorf("%s queries %s, which the scheduler does not serve", f, name)
				} else if strings.HasSuffix(name, "_bucket") && second[name] == nil {
					t.Errorf("%s queries %s, which the scheduler does not serve", f, name)
				}
			}
		}
	}
}
