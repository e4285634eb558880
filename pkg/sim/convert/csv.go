package convert

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// InputError is a bad value in one of the source's CSV files: which file,
// line and column, and what is wrong, so a person can find and fix it.
type InputError struct {
	File string
	// Line is 1-based; the header is line 1.
	Line int
	// Column is the header name; "" when the problem is the row or file.
	Column string
	// Value is what the cell holds, when that is the problem.
	Value   string
	Problem string
}

// Error says where the bad value is and what is wrong with it.
func (e InputError) Error() string {
	at := fmt.Sprintf("%s line %d", e.File, e.Line)
	if e.Column != "" {
		at += ", column " + e.Column
	}
	if e.Value != "" {
		return fmt.Sprintf("%s: %q %s", at, e.Value, e.Problem)
	}
	return at + ": " + e.Problem
}

// Columns of the openb-2023 files that the converter reads; other columns
// (pod_phase) are allowed and ignored.
var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
		"creation_time", "deletion_time", "scheduled_time"}
)

// nodeRow is one line of the node list.
type nodeRow struct {
	line     int
	name     string
	cpuMilli int64
	memMiB   int64
	cards    int
	model    string
}

// podRow is one line of the pod list. Times are seconds from the trace's
// start; scheduled is -1 for a pod that was never scheduled.
type podRow struct {
	line             int
	name             string
	cpuMilli, memMiB int64
	numGPU, gpuMilli int
	spec, qos        string
	created, deleted int64
	scheduled        int64
}

// table reads a CSV file by its header's column names.
type table struct {
	file string
	r    *csv.Reader
	cols map[string]int
	rec  []string
	line int
}

func newTable(file string, r io.Reader, required []string) (*table, error) {
	t := &table{file: file, r: csv.NewReader(r), cols: map[string]int{}}
	header, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return nil, InputError{File: file, Line: 1, Problem: "no header row (" + strings.Join(required, ",") + ")"}
	}
	if err != nil {
		return nil, t.csvError(err)
	}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.cols[h]; dup {
			return nil, InputError{File: file, Line: 1, Column: h, Problem: "the column is there twice"}
		}
		t.cols[h] = i
	}
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			return nil, InputError{File: file, Line: 1, Column: c,
				Problem: "the column is missing (the header needs " + strings.Join(required, ",") + ")"}
		}
	}
	return t, nil
}

// next reads the next row; false at the end of the file.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, t.csvError(err)
	}
	t.rec = rec
	t.line, _ = t.r.FieldPos(0)
	return true, nil
}

func (t *table) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return InputError{File: t.file, Line: pe.Line, Problem: pe.Err.Error()}
	}
	return fmt.Errorf("%s: %w", t.file, err)
}

func (t *table) str(col string) string { return strings.TrimSpace(t.rec[t.cols[col]]) }

func (t *table) bad(col, problem string) error {
	return InputError{File: t.file, Line: t.line, Column: col, Value: t.str(col), Problem: problem}
}

// num reads a whole number that must not be negative.
func (t *table) num(col string) (int64, error) {
	v, err := strconv.ParseInt(t.str(col), 10, 64)
	switch {
	case err != nil:
		return 0, t.bad(col, "is not a whole number")
	case v < 0:
		return 0, t.bad(col, "must not be negative")
	}
	return v, nil
}

// optNum is num for a cell that may be empty: -1 then.
func (t *table) optNum(col string) (int64, error) {
	if t.str(col) == "" {
		return -1, nil
	}
	return t.num(col)
}

// nums reads several columns with num (or optNum when optional) into dst.
func (t *table) nums(cols []string, dst []*int64, optional map[string]bool) error {
	for i, c := range cols {
		read := t.num
		if optional[c] {
			read = t.optNum
		}
		v, err := read(c)
		if err != nil {
			return err
		}
		*dst[i] = v
	}
	return nil
}

// readNodes reads openb_node_list_gpu_node.csv.
func readNodes(file string, r io.Reader) ([]nodeRow, error) {
	t, err := newTable(file, r, nodeColumns)
	if err != nil {
		return nil, err
	}
	var out []nodeRow
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil || !ok {
			return out, err
		}
		n := nodeRow{line: t.line, name: t.str("sn"), model: t.str("model")}
		if first, dup := seen[n.name]; dup {
			return nil, t.bad("sn", fmt.Sprintf("is already the name of the node on line %d", first))
		}
		seen[n.name] = t.line
		var cards int64
		if err := t.nums([]string{"cpu_milli", "memory_mib", "gpu"}, []*int64{&n.cpuMilli, &n.memMiB, &cards}, nil); err != nil {
			return nil, err
		}
		n.cards = int(cards)
		if n.cards > 0 && n.model == "" {
			return nil, t.bad("model", "is empty on a node with cards: the converter needs the cards' model")
		}
		out = append(out, n)
	}
}

// readPods reads an openb pod list (openb_pod_list_*.csv).
func readPods(file string, r io.Reader) ([]podRow, error) {
	t, err := newTable(file, r, podColumns)
	if err != nil {
		return nil, err
	}
	var out []podRow
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil || !ok {
			return out, err
		}
		p := podRow{line: t.line, name: t.str("name"), spec: t.str("gpu_spec"), qos: t.str("qos")}
		if p.name == "" {
			return nil, t.bad("name", "is empty: every pod needs a name")
		}
		if first, dup := seen[p.name]; dup {
			return nil, t.bad("name", fmt.Sprintf("is already the name of the pod on line %d", first))
		}
		seen[p.name] = t.line
		var numGPU, gpuMilli int64
		cols := []string{"cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"}
		dst := []*int64{&p.cpuMilli, &p.memMiB, &numGPU, &gpuMilli, &p.created, &p.deleted, &p.scheduled}
		if err := t.nums(cols, dst, map[string]bool{"scheduled_time": true}); err != nil {
			return nil, err
		}
		p.numGPU, p.gpuMilli = int(numGPU), int(gpuMilli)
		if p.numGPU > 0 && (p.gpuMilli < 1 || p.gpuMilli > 1000) {
			return nil, t.bad("gpu_milli", "is not a share of a card: a pod with num_gpu > 0 asks for 1 to 1000 thousandths")
		}
		out = append(out, p)
	}
}
