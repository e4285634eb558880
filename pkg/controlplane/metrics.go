package controlplane

import (
	"strconv"
	"strings"
)

// Samples reads Prometheus text (a scheduler's /metrics, from Get) into
// metric name -> labels as served ("{a=\"x\",b=\"y\"}", or "" for none) ->
// value. Lines it cannot read are skipped.
func Samples(body string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name, labels, found := strings.Cut(line[:i], "{")
		if found {
			labels = "{" + labels
		}
		if out[name] == nil {
			out[name] = map[string]float64{}
		}
		out[name][labels] = v
	}
	return out
}
