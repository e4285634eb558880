// Package preemption is Cardinal's preemption and reclaim, which know elastic
// pods and preemptibility (SPEC §5).
package preemption

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalPreemption"

// Plugin is the CardinalPreemption scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	args   config.CardinalPreemptionArgs
}

var _ fwk.PreFilterPlugin = &Plugin{}

// NewFactory returns the plugin's factory. Its preemptibleBelowPriority is
// one of the settings every plugin shares (pkg/settings): the state
// classifies pods by it whichever plugins are enabled.
func NewFactory() frameworkruntime.PluginFactory { return New }

// New checks and validates the plugin's args, then builds the plugin.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalPreemptionArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalPreemptionArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalPreemptionArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	return &Plugin{handle: h, args: *args}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// PreFilter has nothing to check yet and skips the plugin for this pod.
func (p *Plugin) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions returns nil: the plugin keeps no per-cycle state yet.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
