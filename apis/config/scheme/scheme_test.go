package scheme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"cardinal.dev/cardinal/apis/config"
	configv1 "cardinal.dev/cardinal/apis/config/v1"
)

const shipped = "../../../config/scheduler-config.yaml"

// load decodes a scheduler configuration exactly as cardinal-scheduler does at start-up.
func load(t *testing.T, data string) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return options.LoadConfigFromFile(klog.Background(), path)
}

func pluginArgs(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) map[string]runtime.Object {
	t.Helper()
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "cardinal-scheduler" {
		t.Fatalf("want one profile cardinal-scheduler, got %d profiles", len(cfg.Profiles))
	}
	args := map[string]runtime.Object{}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		args[pc.Name] = pc.Args
	}
	return args
}

func TestShippedConfigDecodesStrictly(t *testing.T) {
	data, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, string(data))
	if err != nil {
		t.Fatalf("config/scheduler-config.yaml does not decode: %v", err)
	}
	if !cfg.LeaderElection.LeaderElect || cfg.LeaderElection.ResourceName != "cardinal-scheduler" {
		t.Errorf("leader election %+v, want on with lease cardinal-scheduler", cfg.LeaderElection)
	}
	want := map[string]runtime.Object{
		"CardinalGang":       &config.CardinalGangArgs{PermitWaitingTimeSeconds: 60, PodGroupBackoffSeconds: 10, StaleGangSeconds: 60, GroupedKinds: configv1.DefaultGroupedKinds()},
		"CardinalQueue":      &config.CardinalQueueArgs{DefaultQueue: "default"},
		"CardinalCardQuota":  &config.CardinalCardQuotaArgs{CardUnlimitedCPUMemory: false},
		"CardinalPreemption": &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 100},
	}
	got := pluginArgs(t, cfg)
	for name, w := range want {
		if diff := cmp.Diff(w, got[name]); diff != "" {
			t.Errorf("args of %s (-want, +got):\n%s", name, diff)
		}
	}
}

func TestUnknownFieldFails(t *testing.T) {
	data, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct{ from, to, wantErr string }{
		"unknown plugin arg": {
			from: "permitWaitingTimeSeconds: 60", to: "permitWaitingTimeSecs: 60",
			wantErr: `unknown field "permitWaitingTimeSecs"`,
		},
		"misspelt card arg": {
			from: "cardUnlimitedCpuMemory: false", to: "cardUnlimitedCPUMemory: false",
			wantErr: `unknown field "cardUnlimitedCPUMemory"`,
		},
		"wrong type": {
			from: "preemptibleBelowPriority: 100", to: "preemptibleBelowPriority: high",
			wantErr: "preemptibleBelowPriority",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(string(data), tc.from, tc.to, 1)
			if bad == string(data) {
				t.Fatalf("%q not found in the shipped config", tc.from)
			}
			_, err := load(t, bad)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestDefaultsApplied(t *testing.T) {
	_, err := load(t, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: cardinal-scheduler
  pluginConfig:
  - name: CardinalPreemption
    args: {permitWaitingTimeSeconds: 1}
`)
	if err == nil {
		t.Fatal("an args field of another plugin must fail strict decoding")
	}
	cfg, err := load(t, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: cardinal-scheduler
  pluginConfig:
  - name: CardinalGang
    args: {}
  - name: CardinalQueue
    args: {}
  - name: CardinalCardQuota
    args: {}
  - name: CardinalPreemption
    args: {}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]runtime.Object{
		"CardinalGang":       &config.CardinalGangArgs{PermitWaitingTimeSeconds: 60, PodGroupBackoffSeconds: 10, StaleGangSeconds: 60, GroupedKinds: configv1.DefaultGroupedKinds()},
		"CardinalQueue":      &config.CardinalQueueArgs{DefaultQueue: "default"},
		"CardinalCardQuota":  &config.CardinalCardQuotaArgs{},
		"CardinalPreemption": &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 100},
	}
	got := pluginArgs(t, cfg)
	for name, w := range want {
		if diff := cmp.Diff(w, got[name]); diff != "" {
			t.Errorf("defaulted args of %s (-want, +got):\n%s", name, diff)
		}
	}
}
