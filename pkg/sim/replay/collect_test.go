package replay

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuantileOf(t *testing.T) {
	cases := []struct {
		name    string
		buckets map[float64]float64
		q, want float64
	}{
		{"empty", map[float64]float64{}, 0.99, 0},
		{"all in the first bucket", map[float64]float64{0.001: 10, 0.002: 10, inf: 10}, 0.5, 0.0005},
		{"interpolated in the second", map[float64]float64{0.001: 0, 0.002: 10, inf: 10}, 0.5, 0.0015},
		{"beyond the last bound", map[float64]float64{0.001: 0, 0.002: 0, inf: 10}, 0.99, 0.002},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, quantileOf(tc.buckets, tc.q), 1e-9)
		})
	}
}

func TestBucketsOf(t *testing.T) {
	body := `# HELP x
scheduler_scheduling_attempt_duration_seconds_bucket{profile="cardinal-scheduler",result="scheduled",le="0.001"} 3
scheduler_scheduling_attempt_duration_seconds_bucket{profile="cardinal-scheduler",result="scheduled",le="+Inf"} 4
scheduler_scheduling_attempt_duration_seconds_bucket{profile="cardinal-scheduler",result="unschedulable",le="0.001"} 1
scheduler_scheduling_attempt_duration_seconds_bucket{profile="cardinal-scheduler",result="unschedulable",le="+Inf"} 2
`
	assert.Equal(t, map[float64]float64{0.001: 4, inf: 6}, bucketsOf(body))
}
