package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

// pluginBench is one line of the in-process benchmark of Filter + Reserve.
type pluginBench struct {
	Queues       int
	NsPerOp, P99 float64
}

var benchLine = regexp.MustCompile(`^BenchmarkFilterReserve/queues=(\d+)\S*\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) p99-ns`)

// runPluginBench times Cardinal's Filter and Reserve per call in process,
// where the scheduler's sampled plugin metrics (10 µs buckets) cannot see
// them: pkg/cardquota's BenchmarkFilterReserve at 10, 100 and 1000 queues.
func runPluginBench(root string) ([]pluginBench, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "BenchmarkFilterReserve", "-benchtime", "50000x", "-count", "1", "./pkg/cardquota")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %w\n%s", err, out)
	}
	var res []pluginBench
	for _, line := range regexp.MustCompile(`\r?\n`).Split(string(out), -1) {
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		q, _ := strconv.Atoi(m[1])
		ns, _ := strconv.ParseFloat(m[2], 64)
		p99, _ := strconv.ParseFloat(m[3], 64)
		res = append(res, pluginBench{Queues: q, NsPerOp: ns, P99: p99})
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("no BenchmarkFilterReserve results in:\n%s", out)
	}
	return res, nil
}
