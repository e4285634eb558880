package contenders

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestCompressTimers(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cardinal, err := os.ReadFile(filepath.Join(root, "config", "scheduler-config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, config string
		k            float64
		// want are paths into the written configuration and their values.
		want map[string]float64
	}{
		{name: "Cardinal at 5x", config: string(cardinal), k: 5, want: map[string]float64{
			"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 2,
			"CardinalGang.permitWaitingTimeSeconds": 12, "CardinalGang.podGroupBackoffSeconds": 2, "CardinalGang.staleGangSeconds": 12}},
		{name: "scheduler-plugins at 20x: never under a second", config: PeerProfile, k: 20, want: map[string]float64{
			"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1,
			"Coscheduling.permitWaitingTimeSeconds": 3, "Coscheduling.podGroupBackoffSeconds": 1}},
		{name: "the default profile keeps its own backoff, faster", config: DefaultProfile + "podMaxBackoffSeconds: 30\n", k: 3, want: map[string]float64{
			"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 10}},
		{name: "uncompressed", config: PeerProfile, k: 1, want: map[string]float64{"Coscheduling.permitWaitingTimeSeconds": 60}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.config), 0o600))
			out, err := CompressTimers(path, tc.k)
			require.NoError(t, err)
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			var cfg map[string]any
			require.NoError(t, yaml.Unmarshal(data, &cfg))
			got := map[string]float64{}
			for k, v := range cfg {
				if f, ok := v.(float64); ok {
					got[k] = f
				}
			}
			profiles, _ := cfg["profiles"].([]any)
			for _, p := range profiles {
				configs, _ := p.(map[string]any)["pluginConfig"].([]any)
				for _, c := range configs {
					pc := c.(map[string]any)
					args, _ := pc["args"].(map[string]any)
					for k, v := range args {
						if f, ok := v.(float64); ok {
							got[pc["name"].(string)+"."+k] = f
						}
					}
				}
			}
			for k, v := range tc.want {
				assert.Equal(t, v, got[k], k)
			}
		})
	}
}
