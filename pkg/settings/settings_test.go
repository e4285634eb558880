package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"

	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

const header = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: cardinal-scheduler
  resourceNamespace: cardinal-system
`

const cardinalProfile = `- schedulerName: cardinal-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: CardinalGang
      - name: CardinalQueue
      - name: CardinalCardQuota
`

// load reads config through the flags kube-scheduler's command has.
func load(t *testing.T, config string, args ...string) (Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("config", "", "")
	componentbaseoptions.BindLeaderElectionFlags(&componentbaseconfig.LeaderElectionConfiguration{}, fs)
	if err := fs.Parse(append([]string{"--config=" + path}, args...)); err != nil {
		t.Fatal(err)
	}
	return FromFlags(fs)
}

func TestFromFlags(t *testing.T) {
	defaults := state.DefaultSettings()
	tests := []struct {
		name    string
		config  string
		args    []string
		want    state.Settings
		enabled bool
		wantErr string
	}{
		{name: "defaults", config: header + "profiles:\n" + cardinalProfile, want: withCardRoom(defaults), enabled: true},
		{name: "every shared setting, the preemption plugin not even enabled", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalQueue
    args: {defaultQueue: batch}
  - name: CardinalCardQuota
    args: {cardUnlimitedCpuMemory: true}
  - name: CardinalPreemption
    args: {preemptibleBelowPriority: 50}
  - name: CardinalGang
    args: {podGroupBackoffSeconds: 3}
`, want: state.Settings{SchedulerName: "cardinal-scheduler", DefaultQueue: "batch", PreemptibleBelowPriority: 50, CardUnlimitedCPUMemory: true, GangBackoff: 3 * time.Second, StaleGangAfter: 2 * time.Minute, CardRoomFirst: true,
			GroupedKinds: workload.NewKinds(workload.GroupableKinds...)}, enabled: true},
		{name: "grouping only Jobs and JobSets", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalGang
    args: {groupedKinds: [Job.batch, JobSet.jobset.x-k8s.io]}
`, want: func() state.Settings {
			s := withCardRoom(defaults)
			s.GroupedKinds = workload.NewKinds(workload.Job, workload.JobSet)
			return s
		}(), enabled: true},
		{name: "grouping nothing", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalGang
    args: {groupedKinds: []}
`, want: func() state.Settings { s := withCardRoom(defaults); s.GroupedKinds = workload.Kinds{}; return s }(), enabled: true},
		{name: "a kind Cardinal does not group names its field", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalGang
    args: {groupedKinds: [Job.batch, CronJob.batch]}
`, wantErr: "profiles[0].pluginConfig[CardinalGang].args.groupedKinds[1]: Invalid value: \"CronJob.batch\": CronJob.batch is not a kind Cardinal groups"},
		{name: "stale gangs left alone", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalGang
    args: {staleGangSeconds: 0, permitWaitingTimeSeconds: 30}
`, want: func() state.Settings { s := withCardRoom(defaults); s.StaleGangAfter = 0; return s }(), enabled: true},
		{name: "stale gangs given back after the Permit wait and staleGangSeconds", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalGang
    args: {staleGangSeconds: 5, permitWaitingTimeSeconds: 30}
`, want: func() state.Settings { s := withCardRoom(defaults); s.StaleGangAfter = 35 * time.Second; return s }(), enabled: true},
		{name: "NodeResourcesFit ignoring a resource: the card Filter leaves room to it", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: NodeResourcesFit
    args: {ignoredResources: [example.com/foo]}
`, want: defaults, enabled: true},
		{name: "NodeResourcesFit ignoring a resource group", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: NodeResourcesFit
    args: {ignoredResourceGroups: [example.com]}
`, want: defaults, enabled: true},
		{name: "NodeResourcesFit disabled", config: header + "profiles:\n" + cardinalProfile + `      disabled:
      - name: NodeResourcesFit
`, want: defaults, enabled: true},
		{name: "an extender's resource the scheduler ignores", config: header + `extenders:
- urlPrefix: http://127.0.0.1:8888
  filterVerb: filter
  managedResources:
  - name: example.com/shared-gpu
    ignoredByScheduler: true
profiles:
` + cardinalProfile, want: defaults, enabled: true},
		{name: "every filter disabled", config: header + "profiles:\n" + cardinalProfile + `    filter:
      disabled:
      - name: '*'
`, want: defaults, enabled: true},
		{name: "no Cardinal profile", config: header + "profiles:\n- schedulerName: default-scheduler\n", want: defaults},
		{name: "a bad value names its field", config: header + "profiles:\n" + cardinalProfile + `  pluginConfig:
  - name: CardinalGang
    args: {permitWaitingTimeSeconds: -5}
`, wantErr: "profiles[0].pluginConfig[CardinalGang].args.permitWaitingTimeSeconds: Invalid value: -5"},
		{name: "Cardinal in two profiles", config: header + "profiles:\n" + cardinalProfile + strings.Replace(cardinalProfile, "cardinal-scheduler", "other", 1),
			wantErr: "profiles[1].schedulerName: Invalid value: \"other\": Cardinal's plugins are already enabled in profile cardinal-scheduler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := load(t, tc.config, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Enabled != tc.enabled {
				t.Errorf("Enabled = %v, want %v", got.Enabled, tc.enabled)
			}
			if diff := cmp.Diff(tc.want, got.State); diff != "" {
				t.Errorf("settings (-want, +got):\n%s", diff)
			}
		})
	}
}

func withCardRoom(s state.Settings) state.Settings {
	s.CardRoomFirst = true
	return s
}

// TestLeaderElection: the status writers follow the scheduler's leader
// election as kube-scheduler applies it: the configuration, then the flags
// given on the command line.
func TestLeaderElection(t *testing.T) {
	config := header + "profiles:\n" + cardinalProfile
	got, err := load(t, config)
	if err != nil {
		t.Fatal(err)
	}
	if !got.LeaderElection.LeaderElect || got.LeaderElection.ResourceNamespace != "cardinal-system" || got.LeaderElection.LeaseDuration.Duration == 0 {
		t.Errorf("from the file: %+v", got.LeaderElection)
	}
	got, err = load(t, config, "--leader-elect=false", "--leader-elect-resource-namespace=ops")
	if err != nil {
		t.Fatal(err)
	}
	if got.LeaderElection.LeaderElect || got.LeaderElection.ResourceNamespace != "ops" {
		t.Errorf("with flags: %+v, want leader election off in namespace ops", got.LeaderElection)
	}
}
