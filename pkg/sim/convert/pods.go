package convert

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// pod is a GPU pod of the source on its way to a job of its own or a
// gang's member.
type pod struct {
	row podRow
	// spec is the models its gpu_spec allows, deduplicated, in order; nil
	// for any model.
	spec []string
	// share is how many ways the card it asks for is shared: 1 (whole
	// cards), 2 (a half) or 4 (a quarter).
	share int
	// duration is its run time clipped to the options' bounds.
	duration time.Duration
	// clipped is -1 when the run time was raised to the shortest, +1 when
	// cut to the longest.
	clipped  int
	priority int32

	// What it asks for once placed on the cluster (place): replicas is 1
	// for whole cards, else the MPS share it got.
	cards    int
	replicas int
	cardName string
}

// newPod reads what a GPU pod asks for; an unknown QoS class is an error
// naming its line.
func newPod(r podRow, file string, o Options) (pod, error) {
	prio, ok := o.Priorities[r.qos]
	if !ok {
		known := slices.Sorted(maps.Keys(o.Priorities))
		return pod{}, InputError{File: file, Line: r.line, Column: "qos", Value: r.qos,
			Problem: fmt.Sprintf("is not a QoS class with a priority (%s; set one with --priority)", strings.Join(known, ", "))}
	}
	p := pod{row: r, spec: parseSpec(r.spec), share: shareOf(r.numGPU, r.gpuMilli), priority: prio}
	if o.WholeCards {
		p.share = 1
	}
	p.duration, p.clipped = clip(runTime(r), o.MinDuration, o.MaxDuration)
	return p, nil
}

// shareOf is the share of a card a pod asks for (SPEC §1.4 MPS shares):
// a quarter for at most 250 thousandths, a half for at most 500, else
// whole cards. Pods of several cards take whole cards.
func shareOf(numGPU, gpuMilli int) int {
	switch {
	case numGPU > 1 || gpuMilli > 500:
		return 1
	case gpuMilli > 250:
		return 2
	default:
		return 4
	}
}

// parseSpec reads gpu_spec: empty for any model, else models separated by
// "|", in order of preference; a model named twice keeps its first place.
func parseSpec(s string) []string {
	var out []string
	for _, m := range strings.Split(s, "|") {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// runTime is how long the pod ran: from scheduled (or, for a pod never
// scheduled, created) to deleted.
func runTime(r podRow) time.Duration {
	from := r.scheduled
	if from < 0 {
		from = r.created
	}
	return time.Duration(r.deleted-from) * time.Second
}

// cardsHeld is how many cards the pod holds once placed, a share counted
// as its part of a card.
func (p pod) cardsHeld() float64 { return float64(p.cards) / float64(p.replicas) }

// resource is the trace's name for what the pod asks for.
func (p pod) resource() string {
	if p.replicas == 1 {
		return "gpu"
	}
	return fmt.Sprintf("mps-%d", p.replicas)
}

// jobName names a pod's job after the end of its source name
// (openb-pod-0042 gives 0042).
func jobName(prefix, source string) string {
	i := strings.LastIndex(source, "-")
	if i >= 0 && i < len(source)-1 {
		source = source[i+1:]
	}
	return prefix + label(source)
}
