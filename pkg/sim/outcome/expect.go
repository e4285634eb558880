package outcome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// Expectations are the ranges a run's numbers must fall in, by scheduler
// and metric (the JSON names of record.Numbers), as a YAML file gives them:
//
//	cardinal:
//	  allocationContended: {min: 0.95}
//	  partialGangs: {max: 0}
type Expectations map[string]map[string]record.Range

// ParseExpectations reads an expectations file strictly: an unknown metric
// or field is an error that names it and its line.
func ParseExpectations(data []byte) (Expectations, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var e Expectations
	if err := dec.Decode(&e); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the expectations file is empty")
		}
		return nil, err
	}
	known := metricNames()
	for sched, metrics := range e {
		for m, r := range metrics {
			if !known[m] {
				return nil, fmt.Errorf("%s.%s: unknown metric (known: %s)", sched, m, strings.Join(sortedNames(known), ", "))
			}
			if r.Min == nil && r.Max == nil {
				return nil, fmt.Errorf("%s.%s: give min, max or both", sched, m)
			}
			if r.Min != nil && r.Max != nil && *r.Min > *r.Max {
				return nil, fmt.Errorf("%s.%s: min %g is above max %g", sched, m, *r.Min, *r.Max)
			}
		}
	}
	return e, nil
}

// Check checks the run's numbers against e. A scheduler e names that the
// run did not run is not checked: one file serves a run of all the
// schedulers and a run of some.
func (e Expectations) Check(numbers []record.Numbers) []record.Check {
	values := map[string]map[string]float64{}
	for _, n := range numbers {
		values[n.Scheduler] = asMap(n)
	}
	var out []record.Check
	for _, sched := range sortedKeysOf(e) {
		if values[sched] == nil {
			continue
		}
		for _, m := range sortedKeysOf(e[sched]) {
			r := e[sched][m]
			v := values[sched][m]
			ok := (r.Min == nil || v >= *r.Min) && (r.Max == nil || v <= *r.Max)
			out = append(out, record.Check{Scheduler: sched, Metric: m, Value: v, Range: r, OK: ok})
		}
	}
	return out
}

// asMap is a scheduler's numbers by metric name.
func asMap(n record.Numbers) map[string]float64 {
	data, _ := json.Marshal(n)
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	out := map[string]float64{}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out
}

func metricNames() map[string]bool {
	out := map[string]bool{}
	for k := range asMap(record.Numbers{}) {
		out[k] = true
	}
	return out
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
