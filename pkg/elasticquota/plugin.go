// Package elasticquota is Cardinal's queue quota plugin, CardinalQueue:
// guarantee, capability, weighted deserved share and borrowing (SPEC §1.1,
// §3). Queue usage lives in pkg/state, which every Cardinal plugin and the
// Queue status writer read; this plugin decides from it and records
// reservations in it.
package elasticquota

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/pkg/state"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalQueue"

// Plugin is the CardinalQueue scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	state  *state.State
}

var (
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// NewFactory returns the plugin's factory over the scheduling state st.
func NewFactory(st *state.State) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, st)
	}
}

// New checks and validates the plugin's args, then attaches the state to
// the scheduler (once, whichever Cardinal plugin comes first). The default
// queue it names is one of the settings every plugin shares (pkg/settings).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, st *state.State) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalQueueArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalQueueArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalQueueArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	if err := st.Attach(ctx, h); err != nil {
		return nil, err
	}
	return &Plugin{handle: h, state: st}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }
