// Package inspect is Cardinal's view of a cluster for people: it rebuilds
// the scheduling state from the API, with the scheduler's own plugins, and
// answers from the same decision code the scheduler runs. kubectl cardinal
// prints what it answers; the scheduler writes the same sentences into
// PodGroup annotations.
package inspect

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/grouper"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/registry"
	"cardinal.dev/cardinal/pkg/settings"
	"cardinal.dev/cardinal/pkg/state"
)

// Cluster is a read-only copy of what Cardinal's scheduler decides from:
// the scheduling state fed by informers, and the scheduler profile's
// plugins built over it. Nothing it does writes to the cluster. What only
// the running scheduler knows (pods waiting at Permit, a gang backing off,
// room kept for a preemptor) it does not have: Why reads those from what
// the scheduler wrote on the pod and its PodGroup.
type Cluster struct {
	State     *state.State
	Framework framework.Framework
	Settings  state.Settings

	client    kubernetes.Interface
	podGroups pglisters.PodGroupLister
	pods      corelisters.PodLister
	snapshot  *cache.Snapshot
}

// Load decodes a scheduler configuration (config/scheduler-config.yaml's
// format) and builds the Cardinal profile in it over a state read from the
// cluster that cfg reaches. It returns once every informer has synced.
func Load(ctx context.Context, cfg *rest.Config, schedulerConfiguration []byte) (*Cluster, error) {
	obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode(schedulerConfiguration, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding the scheduler configuration: %w", err)
	}
	schedCfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("the scheduler configuration is a %T, not a KubeSchedulerConfiguration", obj)
	}
	conf, err := settings.FromConfiguration(schedCfg)
	if err != nil {
		return nil, err
	}
	if !conf.Enabled {
		return nil, fmt.Errorf("the scheduler configuration has no profile with Cardinal's plugins")
	}
	var profile *schedconfig.KubeSchedulerProfile
	for i := range schedCfg.Profiles {
		if schedCfg.Profiles[i].SchedulerName == conf.State.SchedulerName {
			profile = &schedCfg.Profiles[i]
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// Custom resources have no protobuf encoding: their clients speak JSON.
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	pgc, err := pgclient.NewForConfig(jsonCfg)
	if err != nil {
		return nil, err
	}
	s := conf.State
	s.ReadOnly = true
	st := state.New(s)

	factory := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	pods.Informer()
	nodes.Informer()
	factory.Start(ctx.Done())
	if err := waitForSync(ctx, factory); err != nil {
		return nil, err
	}
	pgFactory := state.PodGroupInformers(pgc)
	podGroups := pgFactory.Scheduling().V1alpha1().PodGroups()
	podGroups.Informer()
	pgFactory.Start(ctx.Done())
	if err := waitForSync(ctx, pgFactory); err != nil {
		return nil, err
	}
	allPods, err := pods.Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	allNodes, err := nodes.Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	// Pods bound to a node that is gone are left out, as kube-scheduler's
	// own snapshot leaves out nodes it knows only from their pods: a
	// NodeInfo without its node would break the Filter plugins.
	known := make(map[string]bool, len(allNodes))
	for _, n := range allNodes {
		known[n.Name] = true
	}
	var assigned []*corev1.Pod
	for _, p := range allPods {
		if known[p.Spec.NodeName] {
			assigned = append(assigned, p)
		}
	}
	snapshot := cache.NewSnapshot(assigned, allNodes)

	// Dynamic resource allocation needs the scheduler's own claim tracker,
	// which a read-only view does not run: pods that use ResourceClaims
	// are judged here without that plugin.
	profile = profile.DeepCopy()
	if pl := profile.Plugins; pl != nil {
		for _, set := range []*schedconfig.PluginSet{&pl.MultiPoint, &pl.PreEnqueue, &pl.PreFilter, &pl.Filter, &pl.PostFilter, &pl.PreScore, &pl.Score, &pl.Reserve, &pl.Permit, &pl.PreBind, &pl.Bind} {
			set.Enabled = slices.DeleteFunc(set.Enabled, func(p schedconfig.Plugin) bool { return p.Name == names.DynamicResources })
		}
	}
	reg := frameworkplugins.NewInTreeRegistry()
	if err := reg.Merge(registry.Plugins(st)); err != nil {
		return nil, err
	}
	metrics.Register()
	fw, err := frameworkruntime.NewFramework(ctx, reg, profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithKubeConfig(cfg),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithPodActivator(noActivator{}),
		frameworkruntime.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(10, time.Second, ctx.Done())),
	)
	if err != nil {
		return nil, fmt.Errorf("building profile %s: %w", conf.State.SchedulerName, err)
	}
	// The plugins asked for more informers (owners, namespaces).
	factory.Start(ctx.Done())
	if err := waitForSync(ctx, factory); err != nil {
		return nil, err
	}
	if err := st.WaitForSync(ctx); err != nil {
		return nil, fmt.Errorf("reading the cluster: %w", err)
	}
	// What the running scheduler's grouper decided lives in its memory:
	// the workloads it grouped are found again from their PodGroups.
	pgLister := podGroups.Lister()
	if err := grouper.Replay(ctx, st, factory, cfg, func(ns, name string) (*schedv1alpha1.PodGroup, error) {
		return pgLister.PodGroups(ns).Get(name)
	}); err != nil {
		return nil, fmt.Errorf("reading the workloads Cardinal groups: %w", err)
	}
	c := &Cluster{State: st, Framework: fw, Settings: s, client: client, podGroups: pgLister, pods: pods.Lister(), snapshot: snapshot}
	if err := c.admitGangs(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// admitGangs runs admission on every gang's first waiting pod, as the
// scheduler's queue does when the pods arrive, so the state knows which
// gangs are held: a held gang keeps nobody's elastic pods waiting. Nor
// does one backing off, which only the running scheduler knows: the state
// learns it from what the scheduler wrote on the PodGroup.
func (c *Cluster) admitGangs(ctx context.Context) error {
	pgs, err := c.podGroups.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pg := range pgs {
		if b, ok := c.backingOff(pg).(refusal.BackingOff); ok {
			c.State.RecordBackoff(gang.KeyOf(pg), b.Until, b.After)
		}
	}
	for _, pg := range pgs {
		pods, err := c.gangPods(pg)
		if err != nil {
			return err
		}
		if first := firstWaiting(pods); first != nil {
			for _, pl := range c.Framework.PreEnqueuePlugins() {
				if st := pl.PreEnqueue(ctx, first); !st.IsSuccess() {
					break
				}
			}
		}
	}
	return nil
}

func waitForSync(ctx context.Context, factory interface {
	WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
}) error {
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("reading %v from the cluster: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// noActivator drops wake-ups: there is no scheduling queue to wake.
type noActivator struct{}

func (noActivator) Activate(klog.Logger, map[string]*corev1.Pod) {}

var _ fwk.PodActivator = noActivator{}
