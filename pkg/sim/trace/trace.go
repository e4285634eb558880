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
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
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
