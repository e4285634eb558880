package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		name     string
		ticks    niceTicks
		min, max float64
		// labels are the labelled ticks only.
		labels []string
	}{
		{name: "hours", ticks: niceTicks{labels: 8}, min: 0, max: 7.08, labels: []string{"0", "1", "2", "3", "4", "5", "6", "7"}},
		{name: "cards", ticks: niceTicks{labels: 6}, min: 0, max: 75, labels: []string{"0", "20", "40", "60"}},
		{name: "percent", ticks: niceTicks{labels: 6}, min: 0, max: 100, labels: []string{"0", "20", "40", "60", "80", "100"}},
		{name: "fractions", ticks: niceTicks{labels: 4}, min: 0, max: 1, labels: []string{"0", "0.25", "0.5", "0.75", "1"}},
		{name: "small", ticks: niceTicks{labels: 5}, min: 0, max: 0.05, labels: []string{"0", "0.01", "0.02", "0.03", "0.04", "0.05"}},
		{name: "counts stay whole", ticks: niceTicks{labels: 6, whole: true}, min: 0, max: 3, labels: []string{"0", "1", "2", "3"}},
		{name: "not starting at zero", ticks: niceTicks{labels: 4}, min: -1, max: 1, labels: []string{"-1", "-0.5", "0", "0.5", "1"}},
		{name: "empty range", ticks: niceTicks{labels: 4}, min: 1, max: 1, labels: nil},
		{name: "too narrow to step", ticks: niceTicks{labels: 8}, min: 0, max: 5e-324, labels: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tick := range tt.ticks.Ticks(tt.min, tt.max) {
				if tick.Value < tt.min || tick.Value > tt.max+1e-9 {
					t.Errorf("tick %v outside [%v, %v]", tick.Value, tt.min, tt.max)
				}
				if tick.Label != "" {
					got = append(got, tick.Label)
				}
			}
			if diff := cmp.Diff(tt.labels, got); diff != "" {
				t.Errorf("labels (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestDurationTicks(t *testing.T) {
	tests := []struct {
		name     string
		min, max float64
		labels   []string
	}{
		{name: "seconds to hours", min: 1, max: 10000, labels: []string{"1 s", "10 s", "1 min", "10 min", "1 h"}},
		{name: "inside one decade", min: 20, max: 50, labels: nil},
		{name: "not above zero", min: 0, max: 10, labels: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tick := range (durationTicks{}).Ticks(tt.min, tt.max) {
				if tick.Value < tt.min || tick.Value > tt.max {
					t.Errorf("tick %v outside [%v, %v]", tick.Value, tt.min, tt.max)
				}
				if tick.Label != "" {
					got = append(got, tick.Label)
				}
			}
			if diff := cmp.Diff(tt.labels, got); diff != "" {
				t.Errorf("labels (-want, +got):\n%s", diff)
			}
		})
	}
}
