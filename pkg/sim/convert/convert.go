// Package convert turns a public GPU cluster trace into a cardinal-sim
// trace (SPEC §8): today Alibaba's openb-2023 (Weng et al., USENIX ATC '23;
// github.com/alibaba/clusterdata, cluster-trace-gpu-v2023). The source has
// nodes and pods; it has no queues, gangs, priorities or preemptibility,
// and its arrivals spread over 149 days a pod list built to fill the
// cluster. What the converter chooses for each of those is an Option, and
// is said in plain sentences in the trace's About, so a report built on
// the trace says what it rests on.
package convert

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// ConvertFiles converts the openb-2023 node list and pod list at the
// given paths. Errors in a file name it, with the line and column.
func ConvertFiles(nodesPath, podsPath string, o Options) (*trace.Trace, error) {
	nodes, err := os.Open(nodesPath)
	if err != nil {
		return nil, err
	}
	defer nodes.Close()
	pods, err := os.Open(podsPath)
	if err != nil {
		return nil, err
	}
	defer pods.Close()
	if o.Name == "" {
		o.Name = nameFrom(podsPath)
	}
	return convert(source{nodesPath, nodes}, source{podsPath, pods}, o)
}

// Convert converts an openb-2023 node list (openb_node_list_gpu_node.csv)
// and pod list (openb_pod_list_*.csv) read from nodes and pods. Errors
// call them "nodes CSV" and "pods CSV".
func Convert(nodes, pods io.Reader, o Options) (*trace.Trace, error) {
	if o.Name == "" {
		o.Name = "openb-2023"
	}
	return convert(source{"nodes CSV", nodes}, source{"pods CSV", pods}, o)
}

// Write writes t as YAML, as trace.Decode reads it.
func Write(w io.Writer, t *trace.Trace) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(t); err != nil {
		return err
	}
	return enc.Close()
}

// nameFrom names a trace after its pods file: openb_pod_list_gpuspec33.csv
// gives openb-2023-gpuspec33.
func nameFrom(podsPath string) string {
	base := strings.TrimSuffix(filepath.Base(podsPath), filepath.Ext(podsPath))
	base = strings.TrimPrefix(base, "openb_pod_list_")
	return namer{}.unique("openb-2023-" + label(base))
}

type source struct {
	name string
	r    io.Reader
}

func convert(nodesIn, podsIn source, o Options) (*trace.Trace, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	nodeRows, err := readNodes(nodesIn.name, nodesIn.r)
	if err != nil {
		return nil, err
	}
	podRows, err := readPods(podsIn.name, podsIn.r)
	if err != nil {
		return nil, err
	}
	groups, err := groupNodes(nodeRows, nodesIn.name, o.CardMemoryMiB)
	if err != nil {
		return nil, err
	}
	c := newCluster(groups)
	st := stats{files: [2]string{filepath.Base(nodesIn.name), filepath.Base(podsIn.name)}, nodes: len(nodeRows), groups: len(groups)}

	slices.SortStableFunc(podRows, func(a, b podRow) int { return cmp.Compare(a.created, b.created) })
	var pods []pod
	for _, r := range podRows {
		if r.numGPU == 0 {
			st.cpuOnly++
			continue
		}
		p, err := newPod(r, podsIn.name, o)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p)
	}
	if !o.WholeCards {
		c.shareNodes(c.demand(pods))
	}
	placed := pods[:0]
	for _, p := range pods {
		if !c.place(&p) {
			st.unplaceable++
			continue
		}
		st.countPod(p)
		placed = append(placed, p)
	}

	units := formGangs(placed, o, rand.New(rand.NewPCG(o.Seed, 1)))
	names := namer{}
	jobs := make([]trace.Job, len(units))
	var offered float64
	for i, u := range units {
		jobs[i] = u.job(placed, names, o)
		offered += float64(len(u.members)) * placed[u.members[0]].cardsHeld() * jobs[i].Duration.Seconds()
		st.countUnit(u)
	}
	created := make([]int64, len(placed))
	for i, p := range placed {
		created[i] = p.row.created
	}
	span := arrivalSpan(offered, c.totalCards(), o.Load)
	submits, gapCap := arrivals(created, span)
	pick := newQueuePicker(o, rand.New(rand.NewPCG(o.Seed, 2)))
	for i, u := range units {
		jobs[i].Submit.Duration = submits[u.members[0]]
		jobs[i].Queue = pick.pick()
	}
	st.offered, st.span, st.gapCap, st.jobs = offered, span, gapCap, len(jobs)

	t := &trace.Trace{
		APIVersion: trace.APIVersion, Kind: trace.Kind, Name: o.Name,
		Nodes: c.nodeGroups(), Queues: queues(c, o), Jobs: jobs,
	}
	t.About = st.about(c, o)
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("the converted trace is not valid, which is a bug in the converter: %w", err)
	}
	return t, nil
}

// job is the trace's job for u: its first pod's ask, as many pods as u
// has, running as long as its longest.
func (u unit) job(pods []pod, names namer, o Options) trace.Job {
	first := pods[u.members[0]]
	name := jobName("p-", first.row.name)
	if len(u.members) > 1 {
		name = jobName("g-", first.row.name)
	}
	j := trace.Job{
		Name: names.unique(name), Duration: trace.Duration{Duration: first.duration},
		Cards: first.cards, Resource: first.resource(), CardName: first.cardName,
		CPU: cpuQuantity(first.row.cpuMilli), Memory: memQuantity(first.row.memMiB),
		Priority: first.priority, Preemptibility: o.Preemptibility,
	}
	if len(u.members) > 1 {
		j.Pods, j.Min = len(u.members), u.min
		for _, m := range u.members {
			j.Duration.Duration = max(j.Duration.Duration, pods[m].duration)
		}
	}
	return j
}
