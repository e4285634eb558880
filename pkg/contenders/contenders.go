// Package contenders are the schedulers Cardinal is measured beside, as
// `make bench` and `cardinal-sim` run them: kube-scheduler's default
// profile, Cardinal's shipped configuration, and scheduler-plugins'
// Coscheduling with CapacityScheduling (its own build, bench/peer). Each runs
// as a process, as a user runs it, under the profile name the pods ask for.
package contenders

import (
	"context"
	"fmt"
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
