// Package cardquota is Cardinal's quota per GPU card model, MIG and MPS
// sub-cards included, charged for the model a pod lands on (SPEC §1.3, §1.4, §4).
package cardquota

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalCardQuota"

// Plugin is the CardinalCardQuota scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	args   config.CardinalCardQuotaArgs
}

var _ fwk.PreFilterPlugin = &Plugin{}

// New checks and validates the plugin's args, then builds the plugin.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalCardQuotaArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalCardQuotaArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalCardQuotaArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
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
