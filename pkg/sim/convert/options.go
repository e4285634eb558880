package convert

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options are the choices the converter makes for what the source does not
// say (queues, gangs, priorities, card memory, sharing) or says in a form
// the sim cannot replay as is (149 days of sparse arrivals). Start from
// DefaultOptions: a zero field is a choice (no gangs, no skew), not "the
// default". Every choice is written into the trace's About.
type Options struct {
	// Name names the trace; "" derives it from the pods file's name
	// (openb_pod_list_gpuspec33.csv gives openb-2023-gpuspec33), or
	// openb-2023 when Convert reads the pods from a reader.
	Name string

	// CardMemoryMiB is one card's memory per model. It names the models'
	// MPS shares (SPEC §1.4) and nothing else: no pod asks for card
	// memory. Default DefaultCardMemoryMiB.
	CardMemoryMiB map[string]int
	// WholeCards, when true, gives every GPU pod whole cards and shares no
	// node with MPS. Default false: sharing pods get MPS shares.
	WholeCards bool

	// MinDuration and MaxDuration clip each pod's run time. Defaults 60s and 2h.
	MinDuration, MaxDuration time.Duration
	// Load is offered card-time over the cluster's card-time while jobs
	// arrive: arrivals are scaled to span W / (Load × C). Default 1.3.
	Load float64

	// Queues is how many queues (team-1 … team-N) share the cluster. Default 4.
	Queues int
	// Guarantee is the part of each model's cards guaranteed to the queues
	// together, split evenly. Default 0.5.
	Guarantee float64
	// Skew makes queue team-i get jobs in proportion to 1/i^Skew. Default
	// 0: uniform.
	Skew float64

	// Gangs is the chance that a whole-card pod, in creation order, starts a
	// gang of the alike pods after it. Default 0.3.
	Gangs float64
	// MaxGangSize bounds a gang's pods; a gang's size is drawn uniformly in
	// [2, MaxGangSize]. Default 8.
	MaxGangSize int
	// GangWindow is how long after its first pod, in source time, a gang
	// takes members. Default 1h.
	GangWindow time.Duration
	// Elastic is the chance that a gang is elastic: its min is half its
	// pods, rounded up. Default 0.3.
	Elastic float64

	// Priorities is each QoS class's job priority. Default
	// DefaultPriorities.
	Priorities map[string]int32
	// Preemptibility of every job. Default "preemptible".
	Preemptibility string

	// Seed seeds the random draws (gangs, elastic gangs, queues). Default 1.
	Seed uint64
}

// DefaultCardMemoryMiB is each openb-2023 model's card memory. The public
// models' are their data sheets'; G2 and G3 are undisclosed internal codes,
// given 16 and 32 GiB here, which only names their MPS shares.
var DefaultCardMemoryMiB = map[string]int{
	"P100": 16384, "T4": 15360, "V100M16": 16384, "V100M32": 32768, "A10": 24576,
	"G2": 16384, "G3": 32768,
}

// DefaultPriorities maps the source's QoS classes to priorities: latency
// sensitive above burstable and guaranteed, best effort lowest.
var DefaultPriorities = map[string]int32{"LS": 1000, "Burstable": 500, "Guaranteed": 500, "BE": 0}

// DefaultOptions are the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		CardMemoryMiB: maps.Clone(DefaultCardMemoryMiB),
		MinDuration:   time.Minute, MaxDuration: 2 * time.Hour, Load: 1.3,
		Queues: 4, Guarantee: 0.5,
		Gangs: 0.3, MaxGangSize: 8, GangWindow: time.Hour, Elastic: 0.3,
		Priorities: maps.Clone(DefaultPriorities), Preemptibility: "preemptible",
		Seed: 1,
	}
}

// AddFlags registers the options on fs, each flag defaulting to o's value
// as it is when called: call it on DefaultOptions before fs.Parse.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Name, "name", o.Name, "name of the trace (default: from the pods file's name)")
	fs.Var(mapFlag[int]{&o.CardMemoryMiB}, "card-memory", "one card's memory in MiB per model, MODEL=MiB,... (names MPS shares)")
	fs.BoolVar(&o.WholeCards, "whole-cards", o.WholeCards, "give GPU-sharing pods whole cards and share no node with MPS")
	fs.DurationVar(&o.MinDuration, "min-duration", o.MinDuration, "shortest run time; shorter pods are raised to it")
	fs.DurationVar(&o.MaxDuration, "max-duration", o.MaxDuration, "longest run time; longer pods are cut to it")
	fs.Float64Var(&o.Load, "load", o.Load, "offered card-time over the cluster's card-time while jobs arrive")
	fs.IntVar(&o.Queues, "queues", o.Queues, "number of queues, team-1 … team-N")
	fs.Float64Var(&o.Guarantee, "guarantee", o.Guarantee, "part of each model's cards guaranteed to the queues together")
	fs.Float64Var(&o.Skew, "skew", o.Skew, "queue team-i gets jobs in proportion to 1/i^skew (0: uniform)")
	fs.Float64Var(&o.Gangs, "gangs", o.Gangs, "chance that a whole-card pod starts a gang of the alike pods after it")
	fs.IntVar(&o.MaxGangSize, "max-gang-size", o.MaxGangSize, "most pods in a gang")
	fs.DurationVar(&o.GangWindow, "gang-window", o.GangWindow, "how long after its first pod (source time) a gang takes members")
	fs.Float64Var(&o.Elastic, "elastic", o.Elastic, "chance that a gang is elastic (min = half its pods)")
	fs.Var(mapFlag[int32]{&o.Priorities}, "priority", "job priority per QoS class, QOS=N,...")
	fs.StringVar(&o.Preemptibility, "preemptibility", o.Preemptibility, "preemptibility of every job")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the random draws (gangs, queues)")
}

// Validate checks the options; each error names the flag.
func (o Options) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if o.MinDuration <= 0 {
		bad("min-duration", "%v must be more than 0", o.MinDuration)
	}
	if o.MaxDuration < o.MinDuration {
		bad("max-duration", "%v is less than --min-duration %v", o.MaxDuration, o.MinDuration)
	}
	if !(o.Load > 0) {
		bad("load", "%v must be more than 0", o.Load)
	}
	if o.Queues < 1 {
		bad("queues", "%d: at least 1 queue", o.Queues)
	}
	if o.Skew < 0 {
		bad("skew", "%v must not be negative", o.Skew)
	}
	for _, f := range []struct {
		flag string
		v    float64
	}{{"guarantee", o.Guarantee}, {"gangs", o.Gangs}, {"elastic", o.Elastic}} {
		if !(f.v >= 0 && f.v <= 1) {
			bad(f.flag, "%v is not between 0 and 1", f.v)
		}
	}
	if o.MaxGangSize < 2 {
		bad("max-gang-size", "%d: a gang has at least 2 pods", o.MaxGangSize)
	}
	if o.GangWindow < 0 {
		bad("gang-window", "%v must not be negative", o.GangWindow)
	}
	for _, m := range slices.Sorted(maps.Keys(o.CardMemoryMiB)) {
		if o.CardMemoryMiB[m] <= 0 {
			bad("card-memory", "%s=%d: a card's memory is more than 0 MiB", m, o.CardMemoryMiB[m])
		}
	}
	if !slices.Contains([]string{"preemptible", "non-preemptible", "semi-preemptible"}, o.Preemptibility) {
		bad("preemptibility", "%q is not preemptible, non-preemptible or semi-preemptible", o.Preemptibility)
	}
	return errors.Join(errs...)
}

// mapFlag is a flag of KEY=N pairs, comma-separated, that sets entries of
// a map and keeps the others.
type mapFlag[V int | int32] struct{ m *map[string]V }

func (f mapFlag[V]) String() string {
	if f.m == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*f.m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, (*f.m)[k]))
	}
	return strings.Join(parts, ",")
}

func (f mapFlag[V]) Set(s string) error {
	m := maps.Clone(*f.m)
	if m == nil {
		m = map[string]V{}
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if !ok || strings.TrimSpace(k) == "" || err != nil {
			return fmt.Errorf("%q is not KEY=N", kv)
		}
		m[strings.TrimSpace(k)] = V(n)
	}
	*f.m = m
	return nil
}
