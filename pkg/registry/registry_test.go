package registry

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/pkg/cardquota"
	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/elasticquota"
	"cardinal.dev/cardinal/pkg/preemption"
)

// TestPluginsCheckTheirArgs: every plugin refuses args of the wrong type and
// invalid args, naming the field, before it builds anything.
func TestPluginsCheckTheirArgs(t *testing.T) {
	tests := []struct {
		name    string
		factory frameworkruntime.PluginFactory
		args    runtime.Object
		wantErr string
	}{
		{"gang negative backoff", coscheduling.New, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 60, PodGroupBackoffSeconds: -1}, "pluginConfig[CardinalGang].args.podGroupBackoffSeconds"},
		{"gang invalid", coscheduling.New, &config.CardinalGangArgs{}, "pluginConfig[CardinalGang].args.permitWaitingTimeSeconds"},
		{"gang wrong type", coscheduling.New, &config.CardinalQueueArgs{}, "want args of type CardinalGangArgs"},
		{"queue valid", elasticquota.New, &config.CardinalQueueArgs{DefaultQueue: "default"}, ""},
		{"queue invalid", elasticquota.New, &config.CardinalQueueArgs{DefaultQueue: "A B"}, "pluginConfig[CardinalQueue].args.defaultQueue"},
		{"card quota valid", cardquota.New, &config.CardinalCardQuotaArgs{}, ""},
		{"card quota wrong type", cardquota.New, &config.CardinalGangArgs{}, "want args of type CardinalCardQuotaArgs"},
		{"preemption valid", preemption.New, &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 100}, ""},
		{"preemption invalid", preemption.New, &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 2_000_000_000}, "pluginConfig[CardinalPreemption].args.preemptibleBelowPriority"},
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

// TestOptionsRegisterEveryPlugin: the binary registers all four plugins.
func TestOptionsRegisterEveryPlugin(t *testing.T) {
	reg := frameworkruntime.Registry{}
	for _, opt := range Options() {
		if err := opt(reg); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{coscheduling.Name, elasticquota.Name, cardquota.Name, preemption.Name} {
		if _, ok := reg[name]; !ok {
			t.Errorf("plugin %s is not registered", name)
		}
	}
}
