package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/pkg/controllers"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroups"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalGang"

// PodGroupLabel is the label with which pods join a scheduler-plugins
// PodGroup; Cardinal reads it unchanged (SPEC §1.2).
const PodGroupLabel = schedv1alpha1.PodGroupLabel

// Plugin is the CardinalGang scheduler plugin.
type Plugin struct {
	handle      fwk.Handle
	clock       clock.WithDelayedExecution
	permitWait  time.Duration
	backoff     time.Duration
	mgr         *manager
	podGroups   pglisters.PodGroupLister
	schedulerOf string
}

var (
	_ fwk.QueueSortPlugin   = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// NewFactory returns the plugin's factory; the plugin starts the status
// controllers, which keep PodGroup status, through runner, and reads
// PodGroups from the informer it shares with the other plugins.
func NewFactory(runner *controllers.Runner, podGroups *podgroups.Source, holds *gang.Holds) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, runner, podGroups, holds)
	}
}

// New checks and validates the plugin's args, then builds the plugin and
// starts the PodGroup informer it reads gangs from.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, runner *controllers.Runner, podGroups *podgroups.Source, holds *gang.Holds) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalGangArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalGangArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalGangArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	informer, lister, err := podGroups.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, err
	}
	p := newPlugin(h, clock.RealClock{}, args, lister, holds)
	if holds != nil {
		// A gang held back no longer stands in the way of elastic pods.
		holds.OnHold(func() { p.activate(p.mgr.unparkAll()) })
	}
	if _, err := informer.AddEventHandler(p.podGroupHandler()); err != nil {
		return nil, err
	}
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(p.podHandler()); err != nil {
		return nil, err
	}
	if runner != nil {
		runner.Start(ctx, h.KubeConfig(), h.ProfileName())
	}
	return p, nil
}

func newPlugin(h fwk.Handle, clk clock.WithDelayedExecution, args *config.CardinalGangArgs, podGroups pglisters.PodGroupLister, holds *gang.Holds) *Plugin {
	backoff := time.Duration(args.PodGroupBackoffSeconds) * time.Second
	return &Plugin{
		handle:      h,
		clock:       clk,
		permitWait:  time.Duration(args.PermitWaitingTimeSeconds) * time.Second,
		backoff:     backoff,
		mgr:         newManager(clk, backoff, holds),
		podGroups:   podGroups,
		schedulerOf: h.ProfileName(),
	}
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// activate moves pods back to the active queue; called outside the manager's lock.
func (p *Plugin) activate(pods map[string]*corev1.Pod) {
	if len(pods) > 0 {
		p.handle.Activate(klog.Background(), pods)
	}
}

func (p *Plugin) ours(pod *corev1.Pod) bool { return pod.Spec.SchedulerName == p.schedulerOf }

func (p *Plugin) podHandler() cache.ResourceEventHandler {
	return eventhandler.For(p.ours,
		func(pod *corev1.Pod) { p.activate(p.mgr.upsertPod(pod)) },
		func(pod *corev1.Pod) { p.activate(p.mgr.deletePod(pod)) })
}

func (p *Plugin) podGroupHandler() cache.ResourceEventHandler {
	return eventhandler.For(nil,
		func(pg *schedv1alpha1.PodGroup) { p.activate(p.mgr.upsertPodGroup(pg)) },
		func(pg *schedv1alpha1.PodGroup) { p.activate(p.mgr.deletePodGroup(pg)) })
}
