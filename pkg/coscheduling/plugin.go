// Package coscheduling is Cardinal's gang plugin: all-or-nothing gangs with
// elastic [min, max] jobs (SPEC §1.2, §2).
package coscheduling

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalGang"

// Plugin is the CardinalGang scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	args   config.CardinalGangArgs
}

var _ fwk.PreFilterPlugin = &Plugin{}

// New checks and validates the plugin's args, then builds the plugin.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalGangArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalGangArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalGangArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
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

// PodGroupLabel is the label with which pods join a scheduler-plugins
// PodGroup; Cardinal reads it unchanged (SPEC §1.2).
const PodGroupLabel = schedv1alpha1.PodGroupLabel
