// Package contenders are the schedulers Cardinal is measured beside, as
// `make bench` and `cardinal-sim` run them: kube-scheduler's default
// profile, Cardinal's shipped configuration, and scheduler-plugins'
// Coscheduling with CapacityScheduling (its own build, bench/peer). Each runs
// as a process, as a user runs it, under the profile name the pods ask for.
package contenders

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"cardinal.dev/cardinal/pkg/controlplane"
)

// Names of the contenders.
const (
	Cardinal         = "cardinal"
	Default          = "default"
	SchedulerPlugins = "scheduler-plugins"
)

// Names are the contenders in the order reports list them.
var Names = []string{Cardinal, Default, SchedulerPlugins}

// DefaultProfile is kube-scheduler's default plugins under the profile name
// the workloads' pods ask for.
const DefaultProfile = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: cardinal-scheduler
`

// PeerProfile is scheduler-plugins' Coscheduling and CapacityScheduling as
// its own manifests combine them, with the same gang timings as Cardinal's
// configuration (Permit wait 60 s, backoff 10 s).
const PeerProfile = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: cardinal-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      - name: CapacityScheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
    postFilter:
      enabled:
      - name: Coscheduling
      - name: CapacityScheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 60
      podGroupBackoffSeconds: 10
`

// Scheduler is one contender: a name for the report, its binary and how
// to configure it.
type Scheduler struct {
	Name string
	// Binary is the scheduler's executable.
	Binary string
	// Config is the KubeSchedulerConfiguration the scheduler runs with.
	Config string
	// Peer marks scheduler-plugins' scheduler: it runs as the administrator
	// (config/ grants it nothing) and needs the ElasticQuota CRD.
	Peer bool
}

// Setup writes the named contenders' configurations into dir and finds
// their binaries in binDir: Cardinal's configuration is root's
// config/scheduler-config.yaml.
func Setup(root, binDir, dir string, names []string) ([]Scheduler, error) {
	var out []Scheduler
	for _, name := range names {
		var s Scheduler
		var data []byte
		switch name {
		case Cardinal:
			yaml, err := os.ReadFile(filepath.Join(root, "config", "scheduler-config.yaml"))
			if err != nil {
				return nil, err
			}
			s, data = Scheduler{Name: name, Binary: filepath.Join(binDir, "cardinal-scheduler")}, yaml
		case Default:
			s, data = Scheduler{Name: name, Binary: filepath.Join(binDir, "cardinal-scheduler")}, []byte(DefaultProfile)
		case SchedulerPlugins:
			s, data = Scheduler{Name: name, Binary: filepath.Join(binDir, "scheduler-plugins-scheduler"), Peer: true}, []byte(PeerProfile)
		default:
			return nil, fmt.Errorf("unknown scheduler %q: choose among %s", name, strings.Join(Names, ", "))
		}
		if _, err := os.Stat(s.Binary); err != nil {
			return nil, fmt.Errorf("%s: %s not found: run `make %s`", name, s.Binary, filepath.Join("bin", filepath.Base(s.Binary)))
		}
		path, err := WriteConfig(dir, name+".yaml", data)
		if err != nil {
			return nil, err
		}
		s.Config = path
		out = append(out, s)
	}
	return out, nil
}

// WriteConfig writes a copy of a scheduler configuration into dir with what
// every contender gets alike, as scheduler_perf does: client QPS high enough
// that binding is not throttled (kube-scheduler's default is 50), and no
// leader election (one replica). Everything else is as given.
func WriteConfig(dir, name string, data []byte) (string, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", err
	}
	cfg["clientConnection"] = map[string]any{"qps": 5000, "burst": 5000}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, out, 0o600)
}

// InstallPeerCRDs installs the ElasticQuota CRD scheduler-plugins'
// CapacityScheduling reads, from the scheduler-plugins release in root's
// module graph (Cardinal's config/ already has its PodGroup CRD).
func InstallPeerCRDs(ctx context.Context, cp *controlplane.ControlPlane, root string) error {
	dir, err := exec.Command("go", "-C", root, "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins").Output()
	if err != nil {
		return fmt.Errorf("finding scheduler-plugins in the module cache: %w", err)
	}
	crds, err := controlplane.ReadManifests(filepath.Join(strings.TrimSpace(string(dir)), "manifests", "capacityscheduling", "crd.yaml"))
	if err != nil {
		return err
	}
	a, err := controlplane.NewApplier(cp.Config())
	if err != nil {
		return err
	}
	return a.Apply(ctx, crds, false)
}

// CompressTimers writes beside the configuration at path a copy whose
// scheduler timers run k times faster, as the replayed cluster's clock
// does (cardinal-sim): kube-scheduler's pod backoff, and every plugin
// argument counted in seconds (a gang's Permit wait and backoff, in
// Cardinal and in scheduler-plugins alike). Each is divided by k and
// rounded, and is at least one second, the least the fields take. At k
// of 1 or less the configuration is returned as it is.
func CompressTimers(path string, k float64) (string, error) {
	if k <= 1 {
		return path, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	scale := func(v float64) int64 { return max(1, int64(math.Round(v/k))) }
	// kube-scheduler's defaults when the configuration leaves them out.
	for key, def := range map[string]float64{"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 10} {
		v, ok := number(cfg[key])
		if !ok {
			v = def
		}
		cfg[key] = scale(v)
	}
	profiles, _ := cfg["profiles"].([]any)
	for _, p := range profiles {
		profile, _ := p.(map[string]any)
		configs, _ := profile["pluginConfig"].([]any)
		for _, c := range configs {
			pc, _ := c.(map[string]any)
			args, _ := pc["args"].(map[string]any)
			for key, val := range args {
				if v, ok := number(val); ok && strings.HasSuffix(key, "Seconds") && v > 0 {
					args[key] = scale(v)
				}
			}
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	compressed := strings.TrimSuffix(path, filepath.Ext(path)) + fmt.Sprintf("-timers-over-%g.yaml", k)
	return compressed, os.WriteFile(compressed, out, 0o600)
}

// number is a YAML number as a float.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
