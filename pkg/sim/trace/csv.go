package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// jobColumns are the columns a jobs CSV may have, named as the YAML fields
// of a job; name, submit and duration are required, the others default as
// in YAML.
var jobColumns = []string{"name", "queue", "submit", "duration", "pods", "min", "cards", "resource", "cardName", "cpu", "memory", "priority", "preemptibility"}

// ReadJobsCSV reads jobs from CSV with a header row of column names (the
// YAML field names of a job, in any order). A bad value's error names its
// line and column.
func ReadJobsCSV(r io.Reader) ([]Job, error) {
	jobs, _, err := readJobsCSV(r)
	return jobs, err
}

// readJobsCSV is ReadJobsCSV with each job's line.
func readJobsCSV(r io.Reader) ([]Job, []int, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, errors.New("line 1: no header row (name,submit,duration,...)")
	}
	if err != nil {
		return nil, nil, err
	}
	cols := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if !slices.Contains(jobColumns, h) {
			return nil, nil, fmt.Errorf("line 1, column %d: unknown column %q (known: %s)", i+1, h, strings.Join(jobColumns, ","))
		}
		if _, dup := cols[h]; dup {
			return nil, nil, fmt.Errorf("line 1, column %d: column %q twice", i+1, h)
		}
		cols[h] = i
	}
	for _, req := range []string{"name", "submit", "duration"} {
		if _, ok := cols[req]; !ok {
			return nil, nil, fmt.Errorf("line 1: column %q is required", req)
		}
	}
	var jobs []Job
	var lines []int
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return jobs, lines, nil
		}
		if err != nil {
			return nil, nil, err
		}
		line, _ := cr.FieldPos(0)
		j, err := jobFromRow(rec, cols)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d, %w", line, err)
		}
		jobs = append(jobs, j)
		lines = append(lines, line)
	}
}

func jobFromRow(rec []string, cols map[string]int) (Job, error) {
	get := func(name string) string {
		if i, ok := cols[name]; ok {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	j := Job{Name: get("name"), Queue: get("queue"), Resource: get("resource"), CardName: get("cardName"),
		CPU: get("cpu"), Memory: get("memory"), Preemptibility: get("preemptibility")}
	for _, d := range []struct {
		col string
		to  *Duration
	}{{"submit", &j.Submit}, {"duration", &j.Duration}} {
		v, err := time.ParseDuration(get(d.col))
		if err != nil {
			return j, fmt.Errorf("column %s: %q is not a duration (e.g. 90s, 1h30m)", d.col, get(d.col))
		}
		d.to.Duration = v
	}
	for _, n := range []struct {
		col string
		to  *int
	}{{"pods", &j.Pods}, {"min", &j.Min}, {"cards", &j.Cards}} {
		if s := get(n.col); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil {
				return j, fmt.Errorf("column %s: %q is not a whole number", n.col, s)
			}
			*n.to = v
		}
	}
	if s := get("priority"); s != "" {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return j, fmt.Errorf("column priority: %q is not a 32-bit whole number", s)
		}
		j.Priority = int32(v)
	}
	return j, nil
}
