package registry

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/pkg/cardquota"
	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/elasticquota"
	"cardinal.dev/cardinal/pkg/preemption"
	"cardinal.dev/cardinal/pkg/settings"
	"cardinal.dev/cardinal/test/statetest"
)

// TestPluginsCheckTheirArgs: every plugin refuses args of the wrong type and
// invalid args, naming the field, before it builds anything.
func TestPluginsCheckTheirArgs(t *testing.T) {
	st := statetest.New()
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
	for _, opt := range Options(statetest.New()) {
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

// TestShippedConfigurationOrder: config/scheduler-config.yaml, as
// kube-scheduler builds it, runs CardinalCardQuota's Filter before
// NodeResourcesFit's: it turns away full nodes at less cost.
func TestShippedConfigurationOrder(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	profile := &obj.(*schedconfig.KubeSchedulerConfiguration).Profiles[0]
	// The plugins' types, not built: the order depends only on the
	// extension points each implements.
	reg := frameworkplugins.NewInTreeRegistry()
	for name, pl := range map[string]fwk.Plugin{
		coscheduling.Name: (*coscheduling.Plugin)(nil), elasticquota.Name: (*elasticquota.Plugin)(nil),
		cardquota.Name: (*cardquota.Plugin)(nil), preemption.Name: (*preemption.Plugin)(nil),
	} {
		if err := reg.Register(name, func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return pl, nil }); err != nil {
			t.Fatal(err)
		}
	}
	schedmetrics.Register()
	client := fake.NewClientset()
	fw, err := frameworkruntime.NewFramework(context.Background(), reg, profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(cache.NewSnapshot(nil, nil)),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}))
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []schedconfig.Plugin) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	filter := names(fw.ListPlugins().Filter.Enabled)
	if card, fit := slices.Index(filter, cardquota.Name), slices.Index(filter, "NodeResourcesFit"); card < 0 || fit < 0 || card > fit {
		t.Errorf("Filter order %v, want %s before NodeResourcesFit", filter, cardquota.Name)
	}
}
