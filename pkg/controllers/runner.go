// Package controllers runs Cardinal's status controllers (PodGroup status,
// Queue status) inside the scheduler's process, under a lease of their own
// (cardinal-system/cardinal-controllers): they start nothing and write
// nothing until that lease is held, so of several replicas only one writes.
package controllers

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/queuestatus"
)

// The lease the controllers hold while they write.
const (
	LeaseName      = "cardinal-controllers"
	LeaseNamespace = "cardinal-system"
)

// Runner starts the controllers once, whichever plugin asks first.
type Runner struct {
	once         sync.Once
	defaultQueue atomic.Value
}

// NewRunner returns a runner whose default queue is "default" until set.
func NewRunner() *Runner {
	r := &Runner{}
	r.defaultQueue.Store(v1alpha1.DefaultQueueName)
	return r
}

// SetDefaultQueue sets the queue of pods that name none, as the queue
// plugin's args say; the controllers read it at each reconcile.
func (r *Runner) SetDefaultQueue(name string) { r.defaultQueue.Store(name) }

// DefaultQueue returns the queue of pods that name none.
func (r *Runner) DefaultQueue() string { return r.defaultQueue.Load().(string) }

// Start runs the controllers in the background until ctx ends; later calls do nothing.
func (r *Runner) Start(ctx context.Context, cfg *rest.Config, schedulerName string) {
	r.once.Do(func() {
		go func() {
			if err := r.run(ctx, cfg, schedulerName); err != nil {
				klog.FromContext(ctx).Error(err, "Cardinal status controllers stopped")
			}
		}()
	})
}

func (r *Runner) run(ctx context.Context, cfg *rest.Config, schedulerName string) error {
	ctrl.SetLogger(klog.NewKlogr().WithName("cardinal-controllers"))
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, schedv1alpha1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	// Left empty, controller-runtime picks per type: protobuf for built-in
	// types (pods, decoded on every watch event) and JSON for custom
	// resources, which have no protobuf encoding. The scheduler's
	// kubeconfig asks for protobuf everywhere, which custom resources refuse.
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = "", ""
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		LeaderElection:                true,
		LeaderElectionID:              LeaseName,
		LeaderElectionNamespace:       LeaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		// Only this scheduler's pods are cached, not every pod in the cluster.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.schedulerName", schedulerName)},
		}},
	})
	if err != nil {
		return err
	}
	if err := (&podgroupstatus.Reconciler{Client: mgr.GetClient(), SchedulerName: schedulerName}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := (&queuestatus.Reconciler{Client: mgr.GetClient(), DefaultQueue: r.DefaultQueue}).SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
