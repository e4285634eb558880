// Command cardinal-scheduler is kube-scheduler with every Cardinal plugin
// registered. It takes kube-scheduler's flags; run it with
// --config=config/scheduler-config.yaml for the cardinal-scheduler profile.
//
// Before kube-scheduler builds the plugins, the command reads, once, the
// settings they share (pkg/settings) into the one scheduling state, and
// starts the status writers under the scheduler's own leader election
// settings (pkg/controllers).
package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/pkg/features"

	"cardinal.dev/cardinal/pkg/compat"
	"cardinal.dev/cardinal/pkg/controllers"
	"cardinal.dev/cardinal/pkg/gauges"
	"cardinal.dev/cardinal/pkg/metrics"
	"cardinal.dev/cardinal/pkg/registry"
	"cardinal.dev/cardinal/pkg/settings"
	"cardinal.dev/cardinal/pkg/state"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A gang's members wait at Permit until its min is placed, usually for
	// milliseconds. With NominatedNodeNameForExpectation on, kube-scheduler
	// patches every such member's nominatedNodeName first, doubling the API
	// writes per gang pod (and, under load, earning 429s that stall
	// binding). Off by default here; --feature-gates turns it back on for
	// clusters whose autoscaler should see Permit-waiting pods' nodes.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.NominatedNodeNameForExpectation): false}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st := state.New(state.DefaultSettings())
	cmd := app.NewSchedulerCommand(registry.Options(st)...)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		// --version needs no API server (kube-scheduler would answer it
		// only after this hook).
		verflag.PrintAndExitIfRequested()
		cfg, err := settings.FromFlags(cmd.Flags())
		if err != nil {
			return err
		}
		if err := keepOffCoordinatedLeaderElection(); err != nil {
			return err
		}
		if err := keepOffKubernetesGangs(); err != nil {
			return err
		}
		if err := keepsLeaderMetric(cmd, cfg); err != nil {
			return err
		}
		// kube-scheduler has applied --feature-gates (PersistentPreRunE) and
		// builds its informers only after this: fit the gates to what the API
		// server serves first (SPEC §6).
		if err := fitToServer(ctx, cmd, cfg); err != nil {
			return err
		}
		st.Configure(cfg.State)
		if cfg.Enabled {
			metrics.Register()
			legacyregistry.CustomMustRegister(gauges.NewCollector(st))
			controllers.Start(ctx, st, cfg.LeaderElection)
		}
		return nil
	}
	code := cli.Run(cmd)
	stop()
	os.Exit(code)
}

// keepOffCoordinatedLeaderElection turns CoordinatedLeaderElection off,
// even when --feature-gates turns it on: with it, kube-scheduler's start-up
// makes this process a candidate for the default scheduler's lease
// (kube-system/kube-scheduler, whatever leaderElection names), which
// Cardinal must never hold and its RBAC does not cover.
func keepOffCoordinatedLeaderElection() error {
	if !utilfeature.DefaultFeatureGate.Enabled(features.CoordinatedLeaderElection) {
		return nil
	}
	klog.Background().Info("Turning CoordinatedLeaderElection off: with it, this process would stand for the default scheduler's lease; cardinal-scheduler elects its leader on its own lease only")
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.CoordinatedLeaderElection): false})
}

// keepOffKubernetesGangs turns GenericWorkload off, and every gate that
// depends on it, even when --feature-gates turns it on. With it,
// kube-scheduler's queue takes every pod that names a Kubernetes PodGroup
// (spec.schedulingGroup) out of the profile's own scheduling and places its
// group in a cycle of its own, which knows neither queues, card quota nor
// preemptibility. In cardinal-scheduler those pods are Cardinal's alone
// (SPEC §1.2): its state reads their PodGroups itself (pkg/state, native.go).
func keepOffKubernetesGangs() error {
	fg := utilfeature.DefaultMutableFeatureGate
	off := map[string]bool{}
	var turnOff func(featuregate.Feature)
	turnOff = func(g featuregate.Feature) {
		if !fg.Enabled(g) || off[string(g)] {
			return
		}
		off[string(g)] = false
		for dependent, needs := range fg.Dependencies() {
			if slices.Contains(needs, g) {
				turnOff(dependent)
			}
		}
	}
	turnOff(features.GenericWorkload)
	if len(off) == 0 {
		return nil
	}
	klog.Background().Info("Turning off kube-scheduler's own gang scheduling: Cardinal schedules pods of Kubernetes' PodGroups as gangs itself", "gates", slices.Sorted(maps.Keys(off)))
	return fg.SetFromMap(off)
}

// keepsLeaderMetric refuses --disabled-metrics that names
// leader_election_master_status while leader election is on: Cardinal's
// controllers start on the replica that leads, which they tell from it, and
// pods of the workloads Cardinal groups wait for one of them, the grouper.
func keepsLeaderMetric(cmd *cobra.Command, cfg settings.Config) error {
	f := cmd.Flags().Lookup("disabled-metrics")
	if f == nil || !f.Changed || !cfg.LeaderElection.LeaderElect {
		return nil
	}
	for _, m := range strings.Split(strings.Trim(f.Value.String(), "[]"), ",") {
		if strings.TrimSpace(m) == leaderMetric {
			return fmt.Errorf("--disabled-metrics names %s, which Cardinal's controllers read to start on the replica that leads (the grouper, whose rulings pods of grouped workloads wait for, among them): remove it from --disabled-metrics", leaderMetric)
		}
	}
	return nil
}

// leaderMetric is the metric pkg/controllers reads to know this replica leads.
const leaderMetric = "leader_election_master_status"

// fitToServer refuses an API server older than Cardinal supports and turns
// off the feature gates whose APIs it does not serve (pkg/compat).
func fitToServer(ctx context.Context, cmd *cobra.Command, cfg settings.Config) error {
	restConfig, err := clientcmd.BuildConfigFromFlags(cfg.Master, cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("finding the API server: %w", err)
	}
	d, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return err
	}
	flagValue := ""
	if f := cmd.Flags().Lookup("feature-gates"); f != nil && f.Changed {
		flagValue = f.Value.String()
	}
	_, err = compat.Fit(ctx, d, utilfeature.DefaultMutableFeatureGate, flagValue, "cardinal-scheduler", klog.Background().WithName("compat"))
	return err
}
