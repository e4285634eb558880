package record

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteThenRead(t *testing.T) {
	lo, hi := 0.9, 2.0
	want := &Run{
		Summary: Summary{Trace: "t", About: "a", Compression: 10, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Schedulers: []Numbers{{Scheduler: "cardinal", Jobs: 3, Completed: 2, Allocation: 0.97}},
			Validity:   Validity{Valid: false, Reasons: []string{"slow"}},
			Checks:     []Check{{Scheduler: "cardinal", Metric: "allocation", Value: 0.97, Range: Range{Min: &lo, Max: &hi}, OK: true}}},
		Timeline: []Sample{
			{Scheduler: "cardinal", T: 1.5, Queue: "team-a", Model: "H100", PerCard: 1, Allocated: 8, Request: 16, Deserved: 12, Guarantee: 8, Capability: -1},
			{Scheduler: "cardinal", T: 1.5, PerCard: 1000, Allocated: 8000, Capacity: 32000, Demand: 16.25},
		},
		Jobs: []Job{{Scheduler: "cardinal", Name: "j", Queue: "team-a", Pods: 4, Min: 2, Cards: 0.25, Resource: "mps-4", Units: 1,
			Duration: 60, CardName: "A|B", Priority: -3, Preemptibility: "preemptible", Submit: 0, MinBound: 2.5, Done: -1,
			Evicted: 1, Killed: 2, GPUHoursLost: 0.125, Alternatives: 4, FirstChoice: 3, PartialSeconds: 4, Partial: true}},
		Moves: []Move{{Scheduler: "cardinal", T: 30, From: "team-a", To: "team-b", Model: "H100", Node: "h100-0"}},
	}
	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, want.Write(dir))
	got, err := Read(dir)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestReadNamesTheBadLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, (&Run{}).Write(dir))
	bad := "scheduler,t,from,to,model,node\ncardinal,30,a,b,H100,n\ncardinal,soon,a,b,H100,n\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, MovesFile), []byte(bad), 0o644))
	_, err := Read(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "moves.csv line 3: column t")
}
