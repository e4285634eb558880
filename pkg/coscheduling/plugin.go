package coscheduling

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/pkg/state"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalGang"

// PodGroupLabel is the label with which pods join a scheduler-plugins
// PodGroup; Cardinal reads it unchanged (SPEC §1.2).
const PodGroupLabel = schedv1alpha1.PodGroupLabel

// Plugin is the CardinalGang scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	state  *state.State
	// permitWait is how long a gang's placed members wait at Permit for the
	// rest of its min (permitWaitingTimeSeconds).
	permitWait time.Duration
	// binds holds a token per gang pod binding (bindSlots).
	binds chan struct{}
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
	_ fwk.PostBindPlugin    = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// NewFactory returns the plugin's factory over the scheduling state st.
func NewFactory(st *state.State) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, st)
	}
}

// New checks and validates the plugin's args, then attaches the state to
// the scheduler (once, whichever Cardinal plugin comes first).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, st *state.State) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalGangArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalGangArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalGangArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	if err := st.Attach(ctx, h); err != nil {
		return nil, err
	}
	st.SetPermitPlugin(Name)
	return &Plugin{handle: h, state: st, permitWait: time.Duration(args.PermitWaitingTimeSeconds) * time.Second, binds: make(chan struct{}, bindSlots)}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }
