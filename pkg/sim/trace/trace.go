// Package trace is cardinal-sim's input (SPEC §8): the nodes of a cluster
// with their card models, its queues, the jobs submitted to it over time,
// and events such as nodes removed or re-sliced. It is versioned
// (apiVersion sim.cardinal.dev/v1alpha1, kind Trace), decoded strictly, and
// a bad file's error names the line and the field.
package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// APIVersion and Kind of a trace file.
const (
	APIVersion = "sim.cardinal.dev/v1alpha1"
	Kind       = "Trace"
)

// Trace is a cluster and the work it is given.
type Trace struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Name names the trace in reports.
	Name string `yaml:"name,omitempty"`
	// About says where the trace comes from and what was chosen for what
	// the source lacks (queues, gangs, priorities), for the report.
	About  string      `yaml:"about,omitempty"`
	Nodes  []NodeGroup `yaml:"nodes"`
	Queues []Queue     `yaml:"queues,omitempty"`
	Jobs   []Job       `yaml:"jobs,omitempty"`
	// JobsCSV is a CSV file of more jobs (csv.go), relative to the trace.
	JobsCSV string  `yaml:"jobsCSV,omitempty"`
	Events  []Event `yaml:"events,omitempty"`

	// lines are the YAML lines of the items of nodes, queues, jobs and
	// events; csvFrom is the index of the first job read from JobsCSV and
	// csvLines each such job's line: errors name the line.
	lines    map[string][]int
	csvFrom  int
	csvLines []int
}

// at names item i of a section of the trace for an error: its line and path.
func (t *Trace) at(section string, i int) string {
	if section == "jobs" && t.csvLines != nil && i >= t.csvFrom {
		return fmt.Sprintf("%s line %d: job", t.JobsCSV, t.csvLines[i-t.csvFrom])
	}
	if l := t.lines[section]; i < len(l) {
		return fmt.Sprintf("line %d: %s[%d]", l[i], section, i)
	}
	return fmt.Sprintf("%s[%d]", section, i)
}

// itemLines finds the line of each item of the top-level sequences.
func itemLines(data []byte) map[string][]int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	out := map[string][]int{}
	m := doc.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		if m[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range m[i+1].Content {
			out[m[i].Value] = append(out[m[i].Value], item.Line)
		}
	}
	return out
}

// NodeGroup is Count alike nodes named <Name>-<i>: whole cards of Model,
// or its cards split into MIG slices or MPS shares.
type NodeGroup struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count,omitempty"` // default 1
	// Model is the card model (the product label); "" for a node without cards.
	Model string `yaml:"model,omitempty"`
	// Cards is how many whole cards it has; MemoryMiB one card's memory.
	Cards     int `yaml:"cards,omitempty"`
	MemoryMiB int `yaml:"memoryMiB,omitempty"`
	// MIG, when set, slices the cards into MIG instances of one profile.
	MIG *MIG `yaml:"mig,omitempty"`
	// MPS, when set, shares the cards among Replicas each.
	MPS *MPS `yaml:"mps,omitempty"`
	// CPU and Memory are the node's allocatable (default 64 and 512Gi).
	CPU    string `yaml:"cpu,omitempty"`
	Memory string `yaml:"memory,omitempty"`
}

// MIG is a node's cards sliced: Slices instances of Profile (e.g. 1g.18gb).
type MIG struct {
	Profile string `yaml:"profile"`
	Slices  int    `yaml:"slices"`
}

// MPS is a node's cards shared among Replicas each.
type MPS struct {
	Replicas int `yaml:"replicas"`
}

// Queue is a Cardinal Queue (SPEC §1.1); the other schedulers get what
// they can use of it (scheduler-plugins: an ElasticQuota per queue).
type Queue struct {
	Name        string            `yaml:"name"`
	Weight      int32             `yaml:"weight,omitempty"`
	Reclaimable *bool             `yaml:"reclaimable,omitempty"`
	Guarantee   map[string]string `yaml:"guarantee,omitempty"`
	Capability  map[string]string `yaml:"capability,omitempty"`
	Cards       []CardQuota       `yaml:"cards,omitempty"`
}

// CardQuota is a queue's quota of one card model.
type CardQuota struct {
	Name       string `yaml:"name"`
	Guarantee  int32  `yaml:"guarantee"`
	Capability *int32 `yaml:"capability,omitempty"`
}

// Job is work submitted at Submit that runs Duration once placed: Pods
// pods, the first Min of which must run together (a gang when Min > 1).
type Job struct {
	Name     string   `yaml:"name"`
	Queue    string   `yaml:"queue,omitempty"`
	Submit   Duration `yaml:"submit"`
	Duration Duration `yaml:"duration"`
	Pods     int      `yaml:"pods,omitempty"` // default 1
	Min      int      `yaml:"min,omitempty"`  // default Pods
	// Cards is how many cards each pod uses (default 1), of Resource:
	// "gpu" (whole cards, the default), "mig-<profile>" (MIG slices of that
	// profile, e.g. mig-1g.10gb) or "mps-<N>" (MPS shares of a card shared
	// N ways, e.g. mps-4 for a quarter card).
	Cards    int    `yaml:"cards,omitempty"`
	Resource string `yaml:"resource,omitempty"`
	// CardName is the card models (products) the pods may use, in order
	// of preference (A|B); "" for any. For MIG and MPS the sim names the
	// models' slices or shares of the job's resource.
	CardName       string `yaml:"cardName,omitempty"`
	CPU            string `yaml:"cpu,omitempty"`    // per pod, default 1
	Memory         string `yaml:"memory,omitempty"` // per pod, default 4Gi
	Priority       int32  `yaml:"priority,omitempty"`
	Preemptibility string `yaml:"preemptibility,omitempty"`
	// Count repeats the job, named <name>-<i>, each Every after the last.
	Count int      `yaml:"count,omitempty"`
	Every Duration `yaml:"every,omitempty"`
}

// Event changes the cluster At a time: a node group removed, added, or its
// cards re-sliced.
type Event struct {
	At         Duration   `yaml:"at"`
	RemoveNode string     `yaml:"removeNode,omitempty"`
	AddNodes   *NodeGroup `yaml:"addNodes,omitempty"`
	// Reslice gives node Node its cards anew (MIG or MPS, or whole again).
	Reslice *Reslice `yaml:"reslice,omitempty"`
}

// Reslice is a node's cards split anew.
type Reslice struct {
	Node string `yaml:"node"`
	MIG  *MIG   `yaml:"mig,omitempty"`
	MPS  *MPS   `yaml:"mps,omitempty"`
}

// Duration is a time.Duration written as Go writes one ("90s", "1h30m").
type Duration struct{ time.Duration }

// UnmarshalYAML reads a duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 90s, 1h30m)", n.Line, s)
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes a duration as Go writes one.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Load reads and checks the trace at path, with the jobs of its JobsCSV.
func Load(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.JobsCSV != "" {
		csvPath := t.JobsCSV
		if !filepath.IsAbs(csvPath) {
			csvPath = filepath.Join(filepath.Dir(path), csvPath)
		}
		f, err := os.Open(csvPath)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		jobs, lines, err := readJobsCSV(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", csvPath, err)
		}
		t.csvFrom, t.csvLines = len(t.Jobs), lines
		t.Jobs = append(t.Jobs, jobs...)
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return t, nil
}

// Decode reads a trace strictly: an unknown field, a value of the wrong
// type, or a rule broken (Validate) is an error that names its line and
// field.
func Decode(data []byte) (*Trace, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	t := &Trace{}
	if err := dec.Decode(t); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the trace is empty")
		}
		return nil, err
	}
	if t.APIVersion != APIVersion || t.Kind != Kind {
		return nil, fmt.Errorf("apiVersion %q and kind %q: want %s and %s", t.APIVersion, t.Kind, APIVersion, Kind)
	}
	t.lines = itemLines(data)
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

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

// Expanded are t's jobs with each Count repeated, in submit order.
func (t *Trace) Expanded() []Job {
	var out []Job
	for _, j := range t.Jobs {
		if j.Count <= 1 {
			out = append(out, j.defaulted())
			continue
		}
		for i := range j.Count {
			c := j
			c.Name = fmt.Sprintf("%s-%d", j.Name, i)
			c.Submit.Duration = j.Submit.Duration + time.Duration(i)*j.Every.Duration
			c.Count = 0
			out = append(out, c.defaulted())
		}
	}
	slices.SortStableFunc(out, func(a, b Job) int { return int(a.Submit.Duration - b.Submit.Duration) })
	return out
}

func (j Job) defaulted() Job {
	if j.Pods == 0 {
		j.Pods = 1
	}
	if j.Min == 0 {
		j.Min = j.Pods
	}
	if j.Resource == "" {
		j.Resource = "gpu"
	}
	if j.Cards == 0 {
		j.Cards = 1
	}
	if j.CPU == "" {
		j.CPU = "1"
	}
	if j.Memory == "" {
		j.Memory = "4Gi"
	}
	return j
}

// validResource tells whether r is a job resource: "", gpu, mig-<profile>
// or mps-<N> with N > 0.
func validResource(r string) bool {
	switch {
	case r == "" || r == "gpu":
		return true
	case strings.HasPrefix(r, "mig-"):
		return len(r) > len("mig-")
	case strings.HasPrefix(r, "mps-"):
		n, err := strconv.Atoi(strings.TrimPrefix(r, "mps-"))
		return err == nil && n > 0
	}
	return false
}

// MPSReplicas is N of a job resource mps-<N>, or 0.
func MPSReplicas(resource string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(resource, "mps-"))
	if !strings.HasPrefix(resource, "mps-") || err != nil {
		return 0
	}
	return n
}

// MIGProfile is the profile of a job resource mig-<profile>, or "".
func MIGProfile(resource string) string {
	p, ok := strings.CutPrefix(resource, "mig-")
	if !ok {
		return ""
	}
	return p
}
