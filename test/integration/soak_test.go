package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"cardinal.dev/cardinal/test/soak"
)

// TestSoakSeeds runs the first seeds of `make soak` (test/soak): random
// queues, nodes, gangs, pods and Deployments with scheduler kills, leader
// failovers, kube-apiserver restarts and API faults, every invariant
// checked after every step; seeds 5 and 10 with a scheduler built with
// -race.
func TestSoakSeeds(t *testing.T) {
	var log strings.Builder
	opts := soak.Options{ControlPlane: env.cp, ConfigPath: filepath.Join(env.root, "config", "scheduler-config.yaml"), Steps: 25, Log: &log,
		RestartAPIServer: true, RaceBinary: filepath.Join(env.cp.BinDir, "cardinal-scheduler-race"), RaceEvery: 5}
	for seed := uint64(1); seed <= 10; seed++ {
		log.Reset()
		res, err := soak.Run(context.Background(), opts, seed)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, log.String())
		}
		if len(res.Violations) > 0 {
			t.Errorf("seed %d violated an invariant (replay: go run ./cmd/soak --seed %d -v):\n%s", seed, seed, log.String())
		}
	}
}
