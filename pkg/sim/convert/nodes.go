package convert

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// group is a node group of the trace with what the converter checks pods
// against: its nodes' CPU and memory in the source's units, and how many
// ways each card is shared (1 for whole cards).
type group struct {
	trace.NodeGroup
	cpuMilli, memMiB int64
	replicas         int
}

// shape is what makes nodes alike: they go in one group.
type shape struct {
	model            string
	cards            int
	cpuMilli, memMiB int64
}

// groupNodes groups alike nodes, sorted by model, cards, CPU and memory,
// and names each group <model>-<cards>gpu-<cpu>c (with the memory too when
// two groups differ only in memory).
func groupNodes(rows []nodeRow, file string, memMiB map[string]int) ([]group, error) {
	counts := map[shape]int{}
	var shapes []shape
	for _, n := range rows {
		s := shape{model: n.model, cards: n.cards, cpuMilli: n.cpuMilli, memMiB: n.memMiB}
		if s.cards == 0 {
			s.model = "" // a node without cards has no card model
		}
		if s.model != "" && memMiB[s.model] <= 0 {
			return nil, fmt.Errorf("%s line %d: the card memory of model %s is unknown: give it with --card-memory %s=<MiB>",
				file, n.line, s.model, s.model)
		}
		if counts[s] == 0 {
			shapes = append(shapes, s)
		}
		counts[s]++
	}
	slices.SortFunc(shapes, func(a, b shape) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.cards, b.cards),
			cmp.Compare(a.cpuMilli, b.cpuMilli), cmp.Compare(a.memMiB, b.memMiB))
	})
	bases := map[string]int{}
	for _, s := range shapes {
		bases[s.baseName()]++
	}
	names := namer{}
	out := make([]group, 0, len(shapes))
	for _, s := range shapes {
		name := s.baseName()
		if bases[name] > 1 {
			name += "-" + strings.ToLower(memQuantity(s.memMiB))
		}
		out = append(out, group{
			NodeGroup: trace.NodeGroup{
				Name: names.unique(name), Count: counts[s], Model: s.model, Cards: s.cards,
				MemoryMiB: memMiB[s.model], CPU: cpuQuantity(s.cpuMilli), Memory: memQuantity(s.memMiB),
			},
			cpuMilli: s.cpuMilli, memMiB: s.memMiB, replicas: 1,
		})
	}
	return out, nil
}

func (s shape) baseName() string {
	model := label(s.model)
	if model == "" {
		model = "cpu"
	}
	cpu := fmt.Sprintf("%dc", s.cpuMilli/1000)
	if s.cpuMilli%1000 != 0 {
		cpu = fmt.Sprintf("%dmc", s.cpuMilli)
	}
	return fmt.Sprintf("%s-%dgpu-%s", model, s.cards, cpu)
}

// cpuQuantity writes milli-CPUs as a quantity: whole cores ("104") or milli ("11908m").
func cpuQuantity(milli int64) string {
	if milli%1000 == 0 {
		return fmt.Sprint(milli / 1000)
	}
	return fmt.Sprintf("%dm", milli)
}

// memQuantity writes MiB as a quantity ("16384Mi").
func memQuantity(mib int64) string { return fmt.Sprintf("%dMi", mib) }

// mpsModel names an MPS share of model as SPEC §1.4 does:
// <product>/mps-<memGiB>g*1/<N>, memGiB the card's memory rounded to the
// nearest GiB.
func mpsModel(model string, memMiB, replicas int) string {
	return fmt.Sprintf("%s/mps-%dg*1/%d", model, (memMiB+512)/1024, replicas)
}

// maxName is the longest name of a node group or a job the trace takes.
const maxName = 50

var notLabel = regexp.MustCompile(`[^a-z0-9]+`)

// label makes s a lowercase DNS label: other characters become "-".
func label(s string) string {
	return strings.Trim(notLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// namer hands out unique names of at most maxName characters: a name
// already given gets -2, -3 ….
type namer map[string]bool

func (n namer) unique(name string) string {
	name = strings.TrimRight(name[:min(len(name), maxName)], "-")
	out := name
	for i := 2; n[out]; i++ {
		suffix := fmt.Sprintf("-%d", i)
		out = strings.TrimRight(name[:min(len(name), maxName-len(suffix))], "-") + suffix
	}
	n[out] = true
	return out
}
