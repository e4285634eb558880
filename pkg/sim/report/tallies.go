package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"cardinal.dev/cardinal/pkg/sim/record"
)

// fates is what befell one scheduler's jobs, named, for the prose under
// the numbers table.
type fates struct {
	// partial and stuck name the jobs that were ever partial and that
	// never reached min, by name.
	partial, stuck []string
	// longestPartial is the most wall seconds a job spent partial.
	longestPartial  float64
	evicted, killed int
	lost            float64
	// mostLost names the jobs that lost the most GPU-hours, most first,
	// with their hours.
	mostLost []string
	// alternatives and firstChoice count placed pods naming alternatives,
	// and those on their first choice.
	alternatives, firstChoice int
}

func jobFates(jobs []record.Job, s string) fates {
	var f fates
	var losers []record.Job
	for _, j := range jobs {
		if j.Scheduler != s {
			continue
		}
		if j.Partial {
			f.partial = append(f.partial, j.Name)
			f.longestPartial = max(f.longestPartial, j.PartialSeconds)
		}
		if j.MinBound < 0 {
			f.stuck = append(f.stuck, j.Name)
		}
		f.evicted += j.Evicted
		f.killed += j.Killed
		f.lost += j.GPUHoursLost
		if j.GPUHoursLost > 0 {
			losers = append(losers, j)
		}
		f.alternatives += j.Alternatives
		f.firstChoice += j.FirstChoice
	}
	slices.Sort(f.partial)
	slices.Sort(f.stuck)
	slices.SortStableFunc(losers, func(a, b record.Job) int {
		return cmp.Or(cmp.Compare(b.GPUHoursLost, a.GPUHoursLost), cmp.Compare(a.Name, b.Name))
	})
	for _, j := range losers {
		f.mostLost = append(f.mostLost, fmt.Sprintf("%s (%s GPU-hours)", j.Name, decimal(j.GPUHoursLost, 1)))
	}
	return f
}

// movePairs names scheduler s's most frequent moves between two queues,
// at most limit of them, most first: "a → b 5, b → a 3".
func movePairs(moves []record.Move, s string, limit int) string {
	type pair struct{ from, to string }
	counts := map[pair]int{}
	for _, m := range moves {
		if m.Scheduler == s {
			counts[pair{m.From, m.To}]++
		}
	}
	pairs := make([]pair, 0, len(counts))
	for p := range counts {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to))
	})
	var parts []string
	for i, p := range pairs {
		if i == limit {
			break
		}
		parts = append(parts, fmt.Sprintf("%s → %s %d", p.from, p.to, counts[p]))
	}
	return strings.Join(parts, ", ")
}
