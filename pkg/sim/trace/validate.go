package trace

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Validate checks what the types do not: names, counts, references.
func (t *Trace) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(t.Nodes) == 0 {
		bad("nodes: a trace needs at least one node")
	}
	groups := map[string]bool{}
	for i, n := range t.Nodes {
		if err := n.check(t.at("nodes", i)); err != nil {
			errs = append(errs, err)
		}
		if groups[n.Name] {
			bad("%s.name: %q is used twice", t.at("nodes", i), n.Name)
		}
		groups[n.Name] = true
	}
	queues := map[string]bool{}
	for i, q := range t.Queues {
		if q.Name == "" {
			bad("%s.name: required", t.at("queues", i))
		}
		if queues[q.Name] {
			bad("%s.name: %q is used twice", t.at("queues", i), q.Name)
		}
		queues[q.Name] = true
	}
	jobs := map[string]bool{}
	for i, j := range t.Jobs {
		p := t.at("jobs", i)
		if err := j.check(p, queues, len(t.Queues) > 0); err != nil {
			errs = append(errs, err)
		} else if jobs[j.Name] {
			bad("%s.name: %q is used twice", p, j.Name)
		}
		jobs[j.Name] = true
	}
	for i, e := range t.Events {
		p := t.at("events", i)
		n := 0
		for _, set := range []bool{e.RemoveNode != "", e.AddNodes != nil, e.Reslice != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			bad("%s: exactly one of removeNode, addNodes and reslice", p)
		}
		if e.AddNodes != nil {
			if err := e.AddNodes.check(p + ".addNodes"); err != nil {
				errs = append(errs, err)
			} else if groups[e.AddNodes.Name] {
				bad("%s.addNodes.name: %q is already a node group", p, e.AddNodes.Name)
			}
			groups[e.AddNodes.Name] = true
		}
	}
	// Events name nodes that exist by then: <group>-<i> of the trace's
	// groups, or of a group added by an earlier event.
	nodes := map[string]bool{}
	addGroup := func(g NodeGroup) {
		for i := range max(g.Count, 1) {
			nodes[fmt.Sprintf("%s-%d", g.Name, i)] = true
		}
	}
	for _, g := range t.Nodes {
		addGroup(g)
	}
	order := make([]int, len(t.Events))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(t.Events[a].At.Duration - t.Events[b].At.Duration) })
	for _, i := range order {
		e, p := t.Events[i], t.at("events", i)
		switch {
		case e.AddNodes != nil:
			addGroup(*e.AddNodes)
		case e.RemoveNode != "" && !nodes[e.RemoveNode]:
			bad("%s.removeNode: no node %q by then (nodes are named <group>-<i>, from 0)", p, e.RemoveNode)
		case e.RemoveNode != "":
			delete(nodes, e.RemoveNode)
		case e.Reslice != nil && !nodes[e.Reslice.Node]:
			bad("%s.reslice.node: no node %q by then (nodes are named <group>-<i>, from 0)", p, e.Reslice.Node)
		case e.Reslice != nil && e.Reslice.MIG != nil && e.Reslice.MPS != nil:
			bad("%s.reslice: mig and mps together: a card is sliced one way", p)
		}
	}
	return errors.Join(errs...)
}

func (j Job) check(p string, queues map[string]bool, haveQueues bool) error {
	switch {
	case j.Name == "":
		return fmt.Errorf("%s.name: required", p)
	case len(j.Name) > 50 || !dnsLabel.MatchString(j.Name):
		return fmt.Errorf("%s.name: %q must be a lowercase DNS label of at most 50 characters (it names a Job and its pods)", p, j.Name)
	case j.Queue != "" && haveQueues && !queues[j.Queue]:
		return fmt.Errorf("%s.queue: %q is not among the trace's queues", p, j.Queue)
	case j.Duration.Duration <= 0:
		return fmt.Errorf("%s.duration: must be more than 0", p)
	case j.Submit.Duration < 0:
		return fmt.Errorf("%s.submit: must not be negative", p)
	case j.Pods < 0 || j.Min < 0 || j.Cards < 0 || j.Count < 0:
		return fmt.Errorf("%s: pods, min, cards and count must not be negative", p)
	case j.Pods > MaxPods || j.Count > MaxCount:
		return fmt.Errorf("%s: at most %d pods and a count of at most %d", p, MaxPods, MaxCount)
	case j.Min > max(j.Pods, 1):
		return fmt.Errorf("%s.min: %d is more than its %d pods", p, j.Min, max(j.Pods, 1))
	case !validResource(j.Resource):
		return fmt.Errorf("%s.resource: %q is not gpu, mig-<profile> or mps-<N>", p, j.Resource)
	case j.Preemptibility != "" && !slices.Contains([]string{"preemptible", "non-preemptible", "semi-preemptible"}, j.Preemptibility):
		return fmt.Errorf("%s.preemptibility: %q is not preemptible, non-preemptible or semi-preemptible", p, j.Preemptibility)
	}
	for _, q := range []struct{ field, v string }{{"cpu", j.CPU}, {"memory", j.Memory}} {
		if q.v == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q.v); err != nil {
			return fmt.Errorf("%s.%s: %q is not a quantity (e.g. 4, 500m, 16Gi)", p, q.field, q.v)
		}
	}
	return nil
}

// Bounds on a trace's sizes, far above any cluster's, so a typo cannot ask
// a replay for a billion objects.
const (
	MaxNodes = 100_000
	MaxPods  = 100_000
	MaxCount = 1_000_000
)

// dnsLabel is a lowercase RFC 1123 label.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func (n NodeGroup) check(p string) error {
	switch {
	case n.Name == "":
		return fmt.Errorf("%s.name: required", p)
	case len(n.Name) > 50 || !dnsLabel.MatchString(n.Name):
		return fmt.Errorf("%s.name: %q must be a lowercase DNS label of at most 50 characters (it names nodes)", p, n.Name)
	case n.Count < 0 || n.Cards < 0 || n.MemoryMiB < 0:
		return fmt.Errorf("%s: count, cards and memoryMiB must not be negative", p)
	case n.Count > MaxNodes:
		return fmt.Errorf("%s.count: at most %d nodes in a group", p, MaxNodes)
	case n.Cards > 0 && n.Model == "":
		return fmt.Errorf("%s.model: a node with cards needs its model", p)
	case n.MIG != nil && n.MPS != nil:
		return fmt.Errorf("%s: mig and mps together: a card is sliced one way", p)
	case n.MIG != nil && (n.MIG.Profile == "" || n.MIG.Slices <= 0):
		return fmt.Errorf("%s.mig: needs a profile and slices > 0", p)
	case n.MPS != nil && n.MPS.Replicas <= 0:
		return fmt.Errorf("%s.mps.replicas: must be more than 0", p)
	case n.MPS != nil && n.MemoryMiB == 0:
		return fmt.Errorf("%s.memoryMiB: a node shared with MPS needs its cards' memory (it names the shares)", p)
	}
	return nil
}
