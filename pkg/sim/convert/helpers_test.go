package convert

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// nodeList builds a node list CSV.
type nodeList struct{ rows []string }

func makeNodes() *nodeList { return &nodeList{} }

// Add adds count alike nodes.
func (b *nodeList) Add(model string, count, cards int, cpuMilli, memMiB int) *nodeList {
	for range count {
		b.rows = append(b.rows, fmt.Sprintf("node-%04d,%d,%d,%d,%s", len(b.rows), cpuMilli, memMiB, cards, model))
	}
	return b
}

func (b *nodeList) CSV() string {
	return "sn,cpu_milli,memory_mib,gpu,model\n" + strings.Join(b.rows, "\n") + "\n"
}

// podB builds one line of a pod list: by default a whole-card LS pod of 4
// CPUs and 16Gi, created at 0, running 10 minutes.
type podB struct {
	name                  string
	cpu, mem, gpus, milli int
	spec, qos             string
	created, run          int
	neverScheduled        bool
}

func makePod(name string) *podB {
	return &podB{name: name, cpu: 4000, mem: 16384, gpus: 1, milli: 1000, qos: "LS", run: 600}
}

func (p *podB) GPU(n, milli int) *podB { p.gpus, p.milli = n, milli; return p }
func (p *podB) Spec(s string) *podB    { p.spec = s; return p }
func (p *podB) QoS(q string) *podB     { p.qos = q; return p }
func (p *podB) CPU(milli int) *podB    { p.cpu = milli; return p }
func (p *podB) At(created int) *podB   { p.created = created; return p }
func (p *podB) Run(seconds int) *podB  { p.run = seconds; return p }
func (p *podB) NeverScheduled() *podB  { p.neverScheduled = true; return p }
func (p *podB) Mem(mib int) *podB      { p.mem = mib; return p }
func (p *podB) row() string {
	scheduled := fmt.Sprint(p.created)
	if p.neverScheduled {
		scheduled = ""
	}
	return fmt.Sprintf("%s,%d,%d,%d,%d,%s,%s,Running,%d,%d,%s",
		p.name, p.cpu, p.mem, p.gpus, p.milli, p.spec, p.qos, p.created, p.created+p.run, scheduled)
}

func podsCSV(pods ...*podB) string {
	var b strings.Builder
	b.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	for _, p := range pods {
		b.WriteString(p.row() + "\n")
	}
	return b.String()
}

// opts are the defaults changed by set.
func opts(set func(*Options)) Options {
	o := DefaultOptions()
	if set != nil {
		set(&o)
	}
	return o
}

func mustConvert(t *testing.T, nodes, pods string, o Options) *trace.Trace {
	t.Helper()
	tr, err := Convert(strings.NewReader(nodes), strings.NewReader(pods), o)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	return tr
}

func jobsByName(tr *trace.Trace) map[string]trace.Job {
	out := map[string]trace.Job{}
	for _, j := range tr.Jobs {
		out[j.Name] = j
	}
	return out
}

func yamlOf(t *testing.T, tr *trace.Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, tr); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.String()
}

// placeable tells, independently of the converter, whether one pod of j
// fits an empty node of some group: a model j allows, its resource (whole
// cards, or MPS shares of the right replicas), its CPU and memory.
func placeable(j trace.Job, groups []trace.NodeGroup) bool {
	var allowed []string
	if j.CardName != "" {
		allowed = strings.Split(j.CardName, "|")
	}
	for _, g := range groups {
		if g.Count == 0 || g.Model == "" || (allowed != nil && !slices.Contains(allowed, g.Model)) {
			continue
		}
		switch r := j.Resource; {
		case r == "gpu" || r == "":
			if g.MPS != nil || g.Cards < max(j.Cards, 1) {
				continue
			}
		case trace.MPSReplicas(r) > 0:
			if g.MPS == nil || g.MPS.Replicas != trace.MPSReplicas(r) || max(j.Cards, 1) > g.Cards*g.MPS.Replicas {
				continue
			}
		default:
			continue
		}
		if atLeast(g.CPU, j.CPU) && atLeast(g.Memory, j.Memory) {
			return true
		}
	}
	return false
}

// atLeast tells whether quantity a is at least b.
func atLeast(a, b string) bool {
	qa, qb := resource.MustParse(a), resource.MustParse(b)
	return qa.Cmp(qb) >= 0
}

func checkPlaceable(t *testing.T, tr *trace.Trace) {
	t.Helper()
	for _, j := range tr.Jobs {
		if !placeable(j, tr.Nodes) {
			t.Errorf("job %s (%d × %s of %q, cpu %s, memory %s) fits no node group", j.Name, j.Cards, j.Resource, j.CardName, j.CPU, j.Memory)
		}
	}
}
