package controllers

import (
	"testing"

	"k8s.io/component-base/metrics"
)

func TestLeadsHere(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]float64 // election name -> gauge
		want bool
	}{
		{"never led: no series", nil, false},
		{"leads", map[string]float64{"kube-scheduler": 1}, true},
		{"led, then stood down", map[string]float64{"kube-scheduler": 0}, false},
		{"another election leads", map[string]float64{"other": 1, "kube-scheduler": 0}, false},
		{"only another election", map[string]float64{"other": 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := metrics.NewKubeRegistry()
			g := metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "leader_election_master_status", StabilityLevel: metrics.ALPHA}, []string{"name"})
			reg.MustRegister(g)
			for name, v := range tc.set {
				g.WithLabelValues(name).Set(v)
			}
			if got := leadsHere(reg); got != tc.want {
				t.Errorf("leadsHere = %v, want %v", got, tc.want)
			}
		})
	}
}
