package report

import (
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cardinal.dev/cardinal/pkg/sim/record"
)

func TestRender(t *testing.T) {
	noMoves := smallRun().obj()
	noMoves.Moves = nil
	noneReachedMin := smallRun().obj()
	for i := range noneReachedMin.Jobs {
		noneReachedMin.Jobs[i].MinBound, noneReachedMin.Jobs[i].Done = -1, -1
	}
	summaryOnly := smallRun().obj()
	summaryOnly.Timeline, summaryOnly.Jobs, summaryOnly.Moves = nil, nil, nil
	noSummary := smallRun().obj()
	noSummary.Summary = record.Summary{}
	oddName := makeRun("odd names").
		cluster("my scheduler/v2", 0, 1, 2, 1).cluster("my scheduler/v2", 60, 2, 2, 2).
		cluster("My-Scheduler-V2", 0, 1, 2, 1).obj()
	long := strings.Repeat("very-long-scheduler-name-", 12)
	longName := makeRun("long name").cluster(long, 0, 1, 2, 1).cluster(long, 60, 2, 2, 2).
		job(record.Job{Scheduler: long, Name: "a", Submit: 0, MinBound: 5, Done: 50}).obj()
	allZeroWaits := makeRun("zero waits").
		job(record.Job{Scheduler: "cardinal", Name: "a", Submit: 10, MinBound: 10, Done: 10}).obj()

	tests := []struct {
		name string
		run  *record.Run
		// files must exist, absent must not.
		files, absent []string
		// markdown must hold each of these lines or fragments.
		markdown []string
	}{
		{
			name: "two schedulers, two queues",
			run:  smallRun().obj(),
			files: []string{MarkdownFile, "allocation-cardinal.png", "allocation-scheduler-plugins.png",
				"queues-cardinal.png", "queues-scheduler-plugins.png", WaitChartFile, JCTChartFile, MovesChartFile},
			markdown: []string{
				"# cardinal-sim report: small",
				"A synthetic trace for tests",
				"K = 60",
				"| Metric | cardinal | scheduler-plugins |",
				"| Jobs submitted (jobs) | 3 | 3 |",
				"| GPU allocation, time-averaged (percent of capacity) | 87.5 % | 87.5 % |",
				"| Submit to min bound, 90th percentile (trace time) | 10 min | 10 min |",
				"| Work lost to evictions and stops (GPU-hours) | 2.5 | 2.5 |",
				"| A\\|B pods placed on their first choice (percent of those placed) | 75 % | 75 % |",
				"| Scheduling attempt, 99th percentile (wall time) | 4 ms | 4 ms |",
				"**The run is not valid**",
				"- pod creation lag p99 0.2 s is over 1 % of the shortest job",
				"| GPU allocation (percent of capacity) | 87 % | 86 % |",
				"1 of 2 checks held.",
				"| allocation | cardinal | 0.875 | at least 0.8 | pass |",
				"| stuckGangs | scheduler-plugins | 1 | at most 0 | **fail** |",
				"![GPU allocation under cardinal](allocation-cardinal.png)",
				"![Queues under scheduler-plugins](queues-scheduler-plugins.png)",
				"![Time from submit to min bound](wait-cdf.png)",
				"![Job completion time](jct-cdf.png)",
				"![Capacity moved between queues](moves.png)",
				"- cardinal: 1 partial gang, 1 stuck gang; partial: serve-b (longest 4 s of wall time below min); stuck: stuck-c.",
				"- cardinal: 3 pods evicted, 1 pod stopped by the cluster changing, 2.5 GPU-hours lost; most by train-a (2 GPU-hours) and serve-b (0.5 GPU-hours).",
				"- cardinal: 75 % on their first choice (3 of 4 pods).",
				"- cardinal: 2 moves, 1 back and forth; most moved: production → research 1, research → production 1.",
				"[timeline.csv](timeline.csv)", "[jobs.csv](jobs.csv)", "[moves.csv](moves.csv)", "[summary.json](summary.json)",
			},
		},
		{
			name:     "no moves leaves the moves chart out",
			run:      noMoves,
			files:    []string{"allocation-cardinal.png", WaitChartFile},
			absent:   []string{MovesChartFile},
			markdown: []string{"No capacity moved between queues under any scheduler."},
		},
		{
			name:     "no job reached min",
			run:      noneReachedMin,
			files:    []string{"queues-cardinal.png"},
			absent:   []string{WaitChartFile, JCTChartFile},
			markdown: []string{"No job reached min under any scheduler.", "No job finished under any scheduler."},
		},
		{
			name:   "summary only draws no chart",
			run:    summaryOnly,
			files:  []string{MarkdownFile},
			absent: []string{"allocation-cardinal.png", "queues-cardinal.png", WaitChartFile, JCTChartFile, MovesChartFile},
			markdown: []string{"| Jobs completed (jobs) | 2 | 2 |",
				"No cluster timeline was recorded for cardinal.", "No queue timeline was recorded for cardinal."},
		},
		{
			name:     "records without a summary",
			run:      noSummary,
			files:    []string{"allocation-cardinal.png", MovesChartFile},
			markdown: []string{"# cardinal-sim report: unnamed trace", "The summary lists no scheduler's numbers.", "The sample check at K/2 was not run."},
		},
		{
			name:     "scheduler names made file names",
			run:      oddName,
			files:    []string{"allocation-my-scheduler-v2.png", "allocation-my-scheduler-v2-2.png"},
			markdown: []string{"(allocation-my-scheduler-v2.png)", "(allocation-my-scheduler-v2-2.png)"},
		},
		{
			name:  "a long scheduler name",
			run:   longName,
			files: []string{"allocation-" + long[:59] + ".png", WaitChartFile},
		},
		{
			name:  "every wait zero",
			run:   allZeroWaits,
			files: []string{WaitChartFile, JCTChartFile},
		},
		{
			name:     "empty run",
			run:      &record.Run{},
			files:    []string{MarkdownFile},
			absent:   []string{WaitChartFile, JCTChartFile, MovesChartFile},
			markdown: []string{"and recorded no scheduler."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Render(tt.run, dir); err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, f := range tt.files {
				checkFile(t, filepath.Join(dir, f))
			}
			for _, f := range tt.absent {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s was drawn, want it left out", f)
				}
			}
			md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.markdown {
				if !strings.Contains(string(md), want) {
					t.Errorf("report.md lacks %q; it reads:\n%s", want, md)
				}
			}
			for _, f := range tt.absent {
				if strings.Contains(string(md), "("+f+")") {
					t.Errorf("report.md links %s, which was not drawn", f)
				}
			}
		})
	}
}

// checkFile fails unless path exists, and is a PNG of about 900×450 when
// it is named like one.
func checkFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(path), err)
		return
	}
	defer f.Close()
	if filepath.Ext(path) != ".png" {
		return
	}
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Errorf("%s: not a PNG: %v", filepath.Base(path), err)
		return
	}
	if cfg.Width != chartWidth || cfg.Height != chartHeight {
		t.Errorf("%s is %d×%d, want %d×%d", filepath.Base(path), cfg.Width, cfg.Height, chartWidth, chartHeight)
	}
}

func TestRenderNilRun(t *testing.T) {
	if err := Render(nil, t.TempDir()); err == nil {
		t.Error("Render(nil) returned no error")
	}
}

// TestRenderReadBack draws the report from files written by record, as
// `cardinal-sim report DIR` does.
func TestRenderReadBack(t *testing.T) {
	dir := t.TempDir()
	if err := smallRun().obj().Write(dir); err != nil {
		t.Fatal(err)
	}
	run, err := record.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(run, dir); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(dir, "queues-cardinal.png"))
}

// TestMetricsCoverNumbers keeps the numbers table whole: a field added to
// record.Numbers needs a row.
func TestMetricsCoverNumbers(t *testing.T) {
	fields := reflect.TypeFor[record.Numbers]().NumField() - 1 // all but Scheduler
	if len(metrics) != fields {
		t.Errorf("the numbers table has %d rows, record.Numbers has %d numbers", len(metrics), fields)
	}
}

// TestRicherRunRenders draws a report of a richer synthetic run (three
// schedulers, several queues and models, moves, partial and stuck gangs)
// and checks every chart and the markdown are written. With
// $REPORT_PREVIEW set it draws it there too, to look at:
// REPORT_PREVIEW=/tmp/report-preview go test -run TestRicherRunRenders ./pkg/sim/report/
func TestRicherRunRenders(t *testing.T) {
	dirs := []string{t.TempDir()}
	if dir := os.Getenv("REPORT_PREVIEW"); dir != "" {
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		if err := Render(previewRun(), dir); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	var pngs int
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Size() == 0 {
			t.Errorf("%s is empty", e.Name())
		}
		if strings.HasSuffix(e.Name(), ".png") {
			pngs++
		}
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "report.md")); err != nil {
		t.Error(err)
	}
	if pngs < 5 {
		t.Errorf("%d charts drawn, want at least 5 (allocation and queues per scheduler, wait and JCT CDFs, moves)", pngs)
	}
}
