package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/pkg/cardquota"
	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/elasticquota"
	"cardinal.dev/cardinal/pkg/preemption"
	"cardinal.dev/cardinal/pkg/settings"
	"cardinal.dev/cardinal/pkg/state"
)

// TestPluginsCheckTheirArgs: every plugin refuses args of the wrong type and
// invalid args, naming the field, before it builds anything.
func TestPluginsCheckTheirArgs(t *testing.T) {
	st := state.New(state.DefaultSettings())
	queueFactory := elasticquota.NewFactory(st)
	gangFactory := coscheduling.NewFactory(st)
	cardFactory := cardquota.NewFactory(st)
	tests := []struct {
		name    string
		factory frameworkruntime.PluginFactory
		args    runtime.Object
		wantErr string
	}{
		{"gang negative backoff", gangFactory, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 60, PodGroupBackoffSeconds: -1}, "pluginConfig[CardinalGang].args.podGroupBackoffSeconds"},
		{"gang invalid", gangFactory, &config.CardinalGangArgs{}, "pluginConfig[CardinalGang].args.permitWaitingTimeSeconds"},
		{"gang wrong type", gangFactory, &config.CardinalQueueArgs{}, "want args of type CardinalGangArgs"},
		{"queue invalid", queueFactory, &config.CardinalQueueArgs{DefaultQueue: "A B"}, "pluginConfig[CardinalQueue].args.defaultQueue"},
		{"queue wrong type", queueFactory, &config.CardinalGangArgs{}, "want args of type CardinalQueueArgs"},
		{"card quota wrong type", cardFactory, &config.CardinalGangArgs{}, "want args of type CardinalCardQuotaArgs"},
		{"preemption invalid", preemption.NewFactory(st), &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 2_000_000_000}, "pluginConfig[CardinalPreemption].args.preemptibleBelowPriority"},
		{"preemption wrong type", preemption.NewFactory(st), &config.CardinalGangArgs{}, "want args of type CardinalPreemptionArgs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.factory(context.Background(), tc.args, nil)
			if tc.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("want a plugin, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// TestOptionsRegisterEveryPlugin: the binary registers all four plugins,
// under the names pkg/settings reads their arguments by.
func TestOptionsRegisterEveryPlugin(t *testing.T) {
	reg := frameworkruntime.Registry{}
	for _, opt := range Options(state.New(state.DefaultSettings())) {
		if err := opt(reg); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{coscheduling.Name, elasticquota.Name, cardquota.Name, preemption.Name}
	for _, name := range names {
		if _, ok := reg[name]; !ok {
			t.Errorf("plugin %s is not registered", name)
		}
	}
	if diff := cmp.Diff(names, settings.Plugins); diff != "" {
		t.Errorf("settings.Plugins (-registered, +read):\n%s", diff)
	}
}
