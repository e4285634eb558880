// Package report draws cardinal-sim's report (SPEC §8) from a run's
// recorded numbers alone (pkg/sim/record): report.md, with PNG charts of GPU
// allocation against demand, each queue against its deserved share, time to
// min bound, job completion time and capacity moving between queues. It
// reads nothing but the record.Run, so `cardinal-sim report DIR` can draw
// the same report again from a run's files.
package report

import (
	"errors"
	"fmt"
	"os"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// MarkdownFile is the report's name in a run's directory.
const MarkdownFile = "report.md"

// Render writes report.md and the charts (PNG) into dir from run. A chart
// with no data is left out, and the report says so, rather than failing.
func Render(run *record.Run, dir string) error {
	if run == nil {
		return errors.New("report: no run to draw")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	v := newView(run)
	drawn, err := drawCharts(v, dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := writeMarkdown(v, drawn, dir); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
