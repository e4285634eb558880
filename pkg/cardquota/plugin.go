// Package cardquota is Cardinal's quota per GPU card model, MIG and MPS
// sub-cards included, charged for the model a pod lands on (SPEC §1.3, §1.4,
// §4): CardinalCardQuota.
//
// Card models are detected per node when the node changes (pkg/cardmodel),
// kept in the queue cache beside each queue's card quota and use, and read
// by Filter without detecting anything. The charge itself is made at
// Reserve by the queue plugin, through the same cache and by pod UID: one
// unit per card of the model of the node the pod is placed on, so a pod
// that may use "A|B" is charged for the one it got, and Unreserve, deletion
// and completion give back exactly that.
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
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroups"
	"cardinal.dev/cardinal/pkg/queuecache"
	"cardinal.dev/cardinal/pkg/workload"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalCardQuota"

// Plugin is the CardinalCardQuota scheduler plugin.
type Plugin struct {
	handle    fwk.Handle
	cache     *queuecache.Cache
	resolver  *workload.Resolver
	podGroups pglisters.PodGroupLister
	holds     *gang.Holds
	nodes     *nodeReports
}

var (
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Shared is what the plugin shares with the other Cardinal plugins.
type Shared struct {
	// Queues is the queue cache the queue plugin charges at Reserve.
	Queues *queuecache.Cache
	// Resolver finds pods' queues, set up by the queue plugin.
	Resolver *workload.Resolver
	// PodGroups is the PodGroup informer every plugin reads.
	PodGroups *podgroups.Source
	// Holds are the gangs held back before their pods are tried.
	Holds *gang.Holds
}

// NewFactory returns the plugin's factory.
func NewFactory(shared Shared) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, shared)
	}
}

// New checks and validates the plugin's args, then feeds node card models
// into the queue cache from the node informer.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, shared Shared) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalCardQuotaArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalCardQuotaArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalCardQuotaArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	if shared.Queues == nil || shared.Resolver == nil || shared.PodGroups == nil {
		return nil, fmt.Errorf("%s shares the queue cache of CardinalQueue: build it with the Cardinal registry", Name)
	}
	// Set before any informer runs, so every pod is charged under one rule.
	shared.Queues.SetCardUnlimitedCPUMemory(args.CardUnlimitedCPUMemory)
	_, pgLister, err := shared.PodGroups.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, err
	}
	p := &Plugin{
		handle:    h,
		cache:     shared.Queues,
		resolver:  shared.Resolver,
		podGroups: pgLister,
		holds:     shared.Holds,
		nodes:     newNodeReports(h.EventRecorder()),
	}
	nodes := h.SharedInformerFactory().Core().V1().Nodes().Informer()
	reg, err := nodes.AddEventHandler(eventhandler.For(nil, p.upsertNode, p.deleteNode))
	if err != nil {
		return nil, err
	}
	p.cache.AddSource(reg.HasSynced)
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }
