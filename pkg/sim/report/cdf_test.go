package report

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cardinal.dev/cardinal/pkg/sim/record"
)

func TestCDF(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want []point
	}{
		{name: "none", xs: nil, want: nil},
		{name: "only NaN", xs: []float64{math.NaN()}, want: nil},
		{name: "one", xs: []float64{5}, want: []point{{5, 0}, {5, 1}}},
		{name: "sorted", xs: []float64{1, 2, 3, 4}, want: []point{{1, 0}, {1, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1}}},
		{name: "unsorted", xs: []float64{4, 1, 3, 2}, want: []point{{1, 0}, {1, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1}}},
		{name: "ties share one point", xs: []float64{2, 1, 2, 2}, want: []point{{1, 0}, {1, 0.25}, {2, 1}}},
		{name: "all equal", xs: []float64{0, 0, 0}, want: []point{{0, 0}, {0, 1}}},
		{name: "NaN left out", xs: []float64{3, math.NaN(), 1}, want: []point{{1, 0}, {1, 0.5}, {3, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			got := cdf(tt.xs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cdf(%v) (-want, +got):\n%s", tt.xs, diff)
			}
			if diff := cmp.Diff(in, tt.xs, cmp.Comparer(func(a, b float64) bool {
				return a == b || math.IsNaN(a) && math.IsNaN(b)
			})); diff != "" {
				t.Errorf("cdf changed its input (-before, +after):\n%s", diff)
			}
		})
	}
}

func TestNeedsLog(t *testing.T) {
	tests := []struct {
		name string
		xs   [][]float64
		want bool
	}{
		{name: "nothing", want: false},
		{name: "all zero", xs: [][]float64{{0, 0}}, want: false},
		{name: "two decades exactly", xs: [][]float64{{1, 100}}, want: false},
		{name: "over two decades", xs: [][]float64{{1, 101}}, want: true},
		{name: "zeros count at the floor", xs: [][]float64{{0, 500}}, want: true},
		{name: "under the floor counts at the floor", xs: [][]float64{{0.01, 50}}, want: false},
		{name: "across schedulers", xs: [][]float64{{2}, {3000}}, want: true},
		{name: "infinity ignored", xs: [][]float64{{5, math.Inf(1)}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsLog(tt.xs...); got != tt.want {
				t.Errorf("needsLog(%v) = %v, want %v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestWaitsAndCompletions(t *testing.T) {
	jobs := []record.Job{
		{Scheduler: "a", Submit: 10, MinBound: 15, Done: 100},
		{Scheduler: "a", Submit: 20, MinBound: -1, Done: -1},
		{Scheduler: "a", Submit: 30, MinBound: 30, Done: -1},
		{Scheduler: "b", Submit: 0, MinBound: 1, Done: 2},
	}
	if diff := cmp.Diff(durations{values: []float64{5, 0}, jobs: 3}, waits(jobs, "a"), cmp.AllowUnexported(durations{})); diff != "" {
		t.Errorf("waits (-want, +got):\n%s", diff)
	}
	if diff := cmp.Diff(durations{values: []float64{90}, jobs: 3}, completions(jobs, "a"), cmp.AllowUnexported(durations{})); diff != "" {
		t.Errorf("completions (-want, +got):\n%s", diff)
	}
}
