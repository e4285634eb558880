// Package cardquota is Cardinal's quota per GPU card model, MIG and MPS
// sub-cards included, charged for the model a pod lands on (SPEC §1.3, §1.4,
// §4): CardinalCardQuota.
//
// Card models are detected per node when the node changes (pkg/cardmodel),
// kept in pkg/state beside each queue's card quota and use, and read by
// Filter without detecting anything. The charge itself is made at Reserve
// by the state, by pod UID: one unit per card of the model of the node the
// pod is placed on, so a pod that may use "A|B" is charged for the one it
// got, and Unreserve, deletion and completion give back exactly that.
//
// This plugin decides where a pod may go: PreFilter reads the pod's
// card-name alternatives and refuses alternatives that need different
// resource names (SPEC §4.4); Filter lets a pod onto a node only if the
// node's model is among them and the queue has quota left for it (SPEC
// §4.2); Score prefers earlier alternatives (SPEC §4.3). PreEnqueue holds a
// gang whose card-request cannot fit its queue's card quota (SPEC §1.2).
package cardquota

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
const Name = "CardinalCardQuota"

// Plugin is the CardinalCardQuota scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	state  *state.State
	// roomFirst: Filter refuses a node without room for the pod's cards
	// (state.Settings.CardRoomFirst).
	roomFirst bool
}

var (
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
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
// cardUnlimitedCpuMemory is one of the settings every plugin shares
// (pkg/settings): the state charges pods by it.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, st *state.State) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalCardQuotaArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalCardQuotaArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalCardQuotaArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	if err := st.Attach(ctx, h); err != nil {
		return nil, err
	}
	return &Plugin{handle: h, state: st, roomFirst: st.Settings().CardRoomFirst}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }
