package record

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Run is everything a run leaves behind.
type Run struct {
	Summary  Summary
	Timeline []Sample
	Jobs     []Job
	Moves    []Move
}

var (
	timelineHeader = []string{"scheduler", "t", "queue", "model", "per_card", "allocated", "request", "deserved", "guarantee", "capability", "capacity", "demand"}
	jobsHeader     = []string{"scheduler", "job", "queue", "pods", "min", "cards", "resource", "units", "duration", "card_name", "priority", "preemptibility", "submit", "min_bound", "done", "evicted", "killed", "gpu_hours_lost", "alternatives", "first_choice", "partial", "partial_seconds"}
	movesHeader    = []string{"scheduler", "t", "from", "to", "model", "node"}
)

// Write writes r into dir, creating it.
func (r *Run) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rows [][]string
	for _, s := range r.Timeline {
		rows = append(rows, []string{s.Scheduler, ftoa(s.T), s.Queue, s.Model, strconv.Itoa(s.PerCard),
			itoa(s.Allocated), itoa(s.Request), itoa(s.Deserved), itoa(s.Guarantee), itoa(s.Capability), itoa(s.Capacity), ftoa(s.Demand)})
	}
	if err := writeCSV(filepath.Join(dir, TimelineFile), timelineHeader, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, j := range r.Jobs {
		rows = append(rows, []string{j.Scheduler, j.Name, j.Queue, strconv.Itoa(j.Pods), strconv.Itoa(j.Min), ftoa(j.Cards), j.Resource, strconv.Itoa(j.Units), ftoa(j.Duration), j.CardName,
			strconv.Itoa(int(j.Priority)), j.Preemptibility, ftoa(j.Submit), ftoa(j.MinBound), ftoa(j.Done),
			strconv.Itoa(j.Evicted), strconv.Itoa(j.Killed), ftoa(j.GPUHoursLost), strconv.Itoa(j.Alternatives), strconv.Itoa(j.FirstChoice),
			strconv.FormatBool(j.Partial), ftoa(j.PartialSeconds)})
	}
	if err := writeCSV(filepath.Join(dir, JobsFile), jobsHeader, rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, m := range r.Moves {
		rows = append(rows, []string{m.Scheduler, ftoa(m.T), m.From, m.To, m.Model, m.Node})
	}
	if err := writeCSV(filepath.Join(dir, MovesFile), movesHeader, rows); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r.Summary, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SummaryFile), append(data, '\n'), 0o644)
}

// Read reads what Write wrote into dir.
func Read(dir string) (*Run, error) {
	r := &Run{}
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &r.Summary); err != nil {
		return nil, fmt.Errorf("%s: %w", SummaryFile, err)
	}
	err = readCSV(filepath.Join(dir, TimelineFile), timelineHeader, func(f fields) {
		r.Timeline = append(r.Timeline, Sample{Scheduler: f.s(0), T: f.f(1), Queue: f.s(2), Model: f.s(3), PerCard: int(f.i(4)),
			Allocated: f.i(5), Request: f.i(6), Deserved: f.i(7), Guarantee: f.i(8), Capability: f.i(9), Capacity: f.i(10), Demand: f.f(11)})
	})
	if err != nil {
		return nil, err
	}
	err = readCSV(filepath.Join(dir, JobsFile), jobsHeader, func(f fields) {
		r.Jobs = append(r.Jobs, Job{Scheduler: f.s(0), Name: f.s(1), Queue: f.s(2), Pods: int(f.i(3)), Min: int(f.i(4)), Cards: f.f(5),
			Resource: f.s(6), Units: int(f.i(7)), Duration: f.f(8), CardName: f.s(9),
			Priority: int32(f.i(10)), Preemptibility: f.s(11), Submit: f.f(12), MinBound: f.f(13), Done: f.f(14),
			Evicted: int(f.i(15)), Killed: int(f.i(16)), GPUHoursLost: f.f(17), Alternatives: int(f.i(18)), FirstChoice: int(f.i(19)),
			Partial: f.s(20) == "true", PartialSeconds: f.f(21)})
	})
	if err != nil {
		return nil, err
	}
	err = readCSV(filepath.Join(dir, MovesFile), movesHeader, func(f fields) {
		r.Moves = append(r.Moves, Move{Scheduler: f.s(0), T: f.f(1), From: f.s(2), To: f.s(3), Model: f.s(4), Node: f.s(5)})
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func writeCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.Write(header); err != nil {
		f.Close()
		return err
	}
	if err := w.WriteAll(rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fields is one CSV row being read; a bad number is kept as an error.
type fields struct {
	row []string
	err *error
	col []string
}

func (f fields) s(i int) string { return f.row[i] }

func (f fields) i(i int) int64 {
	v, err := strconv.ParseInt(f.row[i], 10, 64)
	if err != nil && *f.err == nil {
		*f.err = fmt.Errorf("column %s: %q is not a whole number", f.col[i], f.row[i])
	}
	return v
}

func (f fields) f(i int) float64 {
	v, err := strconv.ParseFloat(f.row[i], 64)
	if err != nil && *f.err == nil {
		*f.err = fmt.Errorf("column %s: %q is not a number", f.col[i], f.row[i])
	}
	return v
}

func readCSV(path string, header []string, row func(fields)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	r := csv.NewReader(file)
	r.FieldsPerRecord = len(header)
	got, err := r.Read()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for i, h := range header {
		if got[i] != h {
			return fmt.Errorf("%s: column %d is %q, want %q", path, i+1, got[i], h)
		}
	}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var bad error
		row(fields{row: rec, err: &bad, col: header})
		if bad != nil {
			return fmt.Errorf("%s line %d: %w", path, line, bad)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
