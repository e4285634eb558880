package outcome

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// whole is the cluster-wide row of a sample: thousandths of a card.
func whole(t float64, allocated, capacity int64) record.Sample {
	return record.Sample{T: t, PerCard: 1000, Allocated: allocated * 1000, Capacity: capacity * 1000}
}

// model is one model's cluster-wide row, in its own units.
func model(t float64, name string, perCard int, allocated, request, capacity int64) record.Sample {
	return record.Sample{T: t, Model: name, PerCard: perCard, Allocated: allocated, Request: request, Capacity: capacity}
}

func TestAllocation(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		timeline              []record.Sample
		all, contended, secsC float64
	}{
		{name: "empty"},
		{name: "full while contended, half after",
			timeline: []record.Sample{
				whole(0, 0, 10), model(0, "H100", 1, 0, 20, 10),
				whole(10, 10, 10), model(10, "H100", 1, 10, 20, 10),
				whole(20, 10, 10), model(20, "H100", 1, 10, 10, 10),
				whole(30, 5, 10), model(30, "H100", 1, 5, 5, 10)},
			all: (10*1 + 10*1 + 10*0.5) / 30.0, contended: 1, secsC: 20},
		{name: "asked for exactly its capacity is contended",
			timeline:  []record.Sample{model(0, "H100", 1, 0, 8, 8), model(10, "H100", 1, 6, 8, 8)},
			contended: 0.75, secsC: 10},
		{name: "an idle model nobody asks for does not count while another is short",
			timeline: []record.Sample{
				model(0, "H100", 1, 8, 16, 8), model(0, "L40S", 1, 0, 0, 16),
				model(10, "H100", 1, 8, 16, 8), model(10, "L40S", 1, 0, 0, 16)},
			contended: 1, secsC: 10},
		{name: "models add up in whole cards: MIG slices by seven",
			timeline: []record.Sample{
				model(0, "H100", 1, 8, 16, 8), model(0, "A100/mig", 7, 0, 70, 56),
				model(10, "H100", 1, 8, 16, 8), model(10, "A100/mig", 7, 28, 70, 56)},
			contended: (8 + 4) / 16.0, secsC: 10},
		{name: "a node removed: capacity falls, allocation is of what is there",
			timeline:  []record.Sample{model(0, "H100", 1, 8, 20, 16), model(10, "H100", 1, 8, 20, 8)},
			contended: 1, secsC: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n record.Numbers
			allocation(&n, tc.timeline)
			assert.InDelta(t, tc.all, n.Allocation, 1e-9)
			assert.InDelta(t, tc.contended, n.AllocationContended, 1e-9)
			assert.InDelta(t, tc.secsC, n.ContendedSeconds, 1e-9)
		})
	}
}

func TestShares(t *testing.T) {
	q := func(t float64, alloc, req, deserved, capability int64) record.Sample {
		return record.Sample{T: t, Queue: "team-a", Model: "H100", PerCard: 1, Allocated: alloc, Request: req, Deserved: deserved, Capability: capability}
	}
	b := func(t float64, alloc, req, deserved int64) record.Sample {
		return record.Sample{T: t, Queue: "team-b", Model: "H100", PerCard: 1, Allocated: alloc, Request: req, Deserved: deserved, Capability: 32}
	}
	gangOf4 := []record.Job{{Queue: "team-a", Resource: "gpu", Min: 4, Units: 1}}
	gangsOf4 := append([]record.Job{{Queue: "team-b", Resource: "gpu", Min: 4, Units: 1}}, gangOf4...)
	for _, tc := range []struct {
		name       string
		timeline   []record.Sample
		jobs       []record.Job
		violations int
		offShare   int
		maxOff     float64
	}{
		{name: "at deserved", timeline: []record.Sample{q(0, 8, 16, 8, 16), q(100, 8, 16, 8, 16)}},
		{name: "exactly at capability is no violation", timeline: []record.Sample{q(0, 16, 16, 16, 16)}},
		{name: "one card above capability is", timeline: []record.Sample{q(0, 17, 20, 16, 16)}, violations: 1, maxOff: 0},
		{name: "uncapped", timeline: []record.Sample{q(0, 30, 30, 30, -1)}},
		{name: "off for 61 s counts", timeline: []record.Sample{q(0, 0, 16, 8, 16), q(61, 0, 16, 8, 16), q(62, 8, 16, 8, 16)},
			offShare: 1, maxOff: 62},
		{name: "off for 60 s does not", timeline: []record.Sample{q(0, 0, 16, 8, 16), q(60, 8, 16, 8, 16)}, maxOff: 60},
		{name: "within one gang is on share", jobs: gangOf4,
			timeline: []record.Sample{q(0, 4, 16, 8, 16), q(100, 4, 16, 8, 16)}},
		{name: "held to what it asks when below deserved",
			timeline: []record.Sample{q(0, 2, 2, 8, 16), q(100, 2, 2, 8, 16)}},
		{name: "above its share, borrowing a guarantee no one asks for", jobs: gangsOf4,
			timeline: []record.Sample{q(0, 24, 24, 8, 32), b(0, 0, 0, 8), q(100, 24, 24, 8, 32), b(100, 0, 0, 8)}},
		{name: "above its share while another queue is short of its own", jobs: gangsOf4,
			timeline: []record.Sample{q(0, 24, 24, 12, 32), b(0, 0, 16, 12), q(100, 24, 24, 12, 32), b(100, 0, 16, 12)},
			offShare: 2, maxOff: 100},
		{name: "above its share while another could take one of its gangs", jobs: gangsOf4,
			timeline: []record.Sample{q(0, 20, 24, 12, 32), b(0, 8, 16, 12), q(100, 20, 24, 12, 32), b(100, 8, 16, 12)},
			offShare: 1, maxOff: 100},
		{name: "above its share while another is short by less than one of its gangs", jobs: gangsOf4,
			timeline: []record.Sample{q(0, 20, 24, 12, 32), b(0, 10, 16, 12), q(100, 20, 24, 12, 32), b(100, 10, 16, 12)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n record.Numbers
			shares(&n, tc.timeline, tc.jobs)
			assert.Equal(t, tc.violations, n.CapabilityViolations, "violations")
			assert.Equal(t, tc.offShare, n.OffShare, "off share")
			assert.InDelta(t, tc.maxOff, n.MaxOffShareSeconds, 1e-9)
		})
	}
}

func TestBackAndForth(t *testing.T) {
	m := func(t float64, from, to, model string) record.Move {
		return record.Move{T: t, From: from, To: to, Model: model}
	}
	for _, tc := range []struct {
		name  string
		moves []record.Move
		want  int
	}{
		{name: "none"},
		{name: "one way", moves: []record.Move{m(0, "a", "b", "H100"), m(10, "a", "b", "H100")}},
		{name: "and back within ten minutes", moves: []record.Move{m(0, "a", "b", "H100"), m(599, "b", "a", "H100")}, want: 1},
		{name: "and back later", moves: []record.Move{m(0, "a", "b", "H100"), m(601, "b", "a", "H100")}},
		{name: "back on another model", moves: []record.Move{m(0, "a", "b", "H100"), m(10, "b", "a", "A100")}},
		{name: "each move back pairs once", moves: []record.Move{m(0, "a", "b", "H100"), m(10, "b", "a", "H100"), m(20, "b", "a", "H100")}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, backAndForth(tc.moves))
		})
	}
}

func TestNumbersOfJobs(t *testing.T) {
	jobs := []record.Job{
		{Name: "done", Min: 4, Submit: 0, MinBound: 10, Done: 70, Alternatives: 4, FirstChoice: 3},
		{Name: "stuck", Min: 2, Submit: 5, MinBound: -1, Done: -1},
		{Name: "single-unfinished", Min: 1, Submit: 5, MinBound: -1, Done: -1},
		{Name: "partial", Min: 2, Submit: 0, MinBound: 20, Done: 100, Partial: true, Evicted: 1, GPUHoursLost: 0.5},
	}
	n := Numbers("cardinal", nil, jobs, nil, Measured{})
	assert.Equal(t, 4, n.Jobs)
	assert.Equal(t, 2, n.Completed)
	assert.Equal(t, 1, n.StuckGangs)
	assert.Equal(t, 2, n.UnfinishedJob)
	assert.Equal(t, 1, n.PartialGangs)
	assert.Equal(t, 1, n.Evictions)
	assert.InDelta(t, 0.75, n.FirstChoice, 1e-9)
	assert.InDelta(t, 10, n.WaitP50, 1e-9)
	assert.InDelta(t, 100, n.JCTP99, 1e-9)
}

func TestExpectations(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		wantErr  string
	}{
		{name: "ranges", in: "cardinal:\n  allocationContended: {min: 0.95}\n  partialGangs: {max: 0}\n"},
		{name: "empty", in: "", wantErr: "empty"},
		{name: "unknown metric", in: "cardinal:\n  utilisation: {min: 1}\n", wantErr: "cardinal.utilisation: unknown metric"},
		{name: "unknown field", in: "cardinal:\n  partialGangs: {most: 0}\n", wantErr: "most"},
		{name: "no bound", in: "cardinal:\n  partialGangs: {}\n", wantErr: "give min, max or both"},
		{name: "min above max", in: "cardinal:\n  partialGangs: {min: 2, max: 1}\n", wantErr: "above max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseExpectations([]byte(tc.in))
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
	e, err := ParseExpectations([]byte("cardinal:\n  allocationContended: {min: 0.95}\n  partialGangs: {max: 0}\ndefault:\n  jobs: {min: 1}\n"))
	require.NoError(t, err)
	checks := e.Check([]record.Numbers{{Scheduler: "cardinal", AllocationContended: 0.95, PartialGangs: 1}})
	got := map[string]bool{}
	for _, c := range checks {
		got[c.Scheduler+"."+c.Metric] = c.OK
	}
	assert.Equal(t, map[string]bool{"cardinal.allocationContended": true, "cardinal.partialGangs": false}, got,
		"at the edge passes; one partial gang fails; a scheduler not run is not checked")
}

func TestValidity(t *testing.T) {
	good := record.Numbers{Scheduler: "cardinal", CreationLagP99: 0.2, AttemptP99: 0.01, ShortestJob: 6}
	for _, tc := range []struct {
		name    string
		n       record.Numbers
		writes  int
		sample  *record.SampleCheck
		reasons []string
	}{
		{name: "valid", n: good},
		{name: "late pods", n: record.Numbers{Scheduler: "cardinal", CreationLagP99: 1, AttemptP99: 0.01, ShortestJob: 6}, reasons: []string{"after their submit time"}},
		{name: "jobs too short for the attempts", n: record.Numbers{Scheduler: "cardinal", AttemptP99: 0.2, ShortestJob: 6}, reasons: []string{"shortest job"}},
		{name: "jobs under two seconds", n: record.Numbers{Scheduler: "cardinal", AttemptP99: 0.001, ShortestJob: 1.9}, reasons: []string{"shortest job"}},
		{name: "kubelet writes failed", n: good, writes: 3, reasons: []string{"3 simulated kubelet writes"}},
		{name: "sample disagrees", n: good, sample: &record.SampleCheck{Scheduler: "cardinal", AllocationAtK: 0.9, AllocationAtHalfK: 0.8, MeanJCTAtK: 100, MeanJCTAtHalfK: 100},
			reasons: []string{"disagrees"}},
		{name: "sample agrees within 5 %", n: good, sample: &record.SampleCheck{Scheduler: "cardinal", AllocationAtK: 0.95, AllocationAtHalfK: 0.91, MeanJCTAtK: 100, MeanJCTAtHalfK: 96}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sample != nil {
				Agree(tc.sample)
			}
			v := Validity([]record.Numbers{tc.n}, map[string]int{"cardinal": tc.writes}, tc.sample)
			assert.Equal(t, len(tc.reasons) == 0, v.Valid, v.Reasons)
			require.Len(t, v.Reasons, len(tc.reasons))
			for i, r := range tc.reasons {
				assert.Contains(t, v.Reasons[i], r)
			}
		})
	}
}
