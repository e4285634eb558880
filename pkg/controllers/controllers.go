// Package controllers runs Cardinal's status writers inside the scheduler's
// process: Queue status from the scheduler's own numbers (pkg/queuestatus)
// and PodGroup status from its pods (pkg/podgroupstatus).
//
// They follow the scheduler's own leader election: with it off they start
// at once; with it on they start once this process holds the scheduler's
// lease (its leaderElection.resourceNamespace and resourceName), and they
// end with the process, which kube-scheduler stops when it loses the lease.
// So of several replicas only the one that schedules writes, and Queue
// status counts the pods that replica has reserved, not only bound ones.
package controllers

import (
	"context"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/queuestatus"
	"cardinal.dev/cardinal/pkg/state"
)

// Start runs the status writers in the background until ctx ends. They
// begin once a Cardinal plugin has attached st to the scheduler (and so
// knows how to reach the cluster) and, with leader election on, once this
// process leads the scheduler.
func Start(ctx context.Context, st *state.State, le componentbaseconfig.LeaderElectionConfiguration) {
	go func() {
		logger := klog.FromContext(ctx).WithName("cardinal-controllers")
		if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			return st.Attached(), nil
		}); err != nil {
			return
		}
		if le.LeaderElect {
			if err := waitLeading(ctx, st.KubeConfig(), le); err != nil {
				return
			}
			logger.Info("This process leads the scheduler: starting Cardinal's status writers", "lease", le.ResourceNamespace+"/"+le.ResourceName)
		}
		// Metrics of the scheduling state and notes of gangs to write status
		// for come from the replica that leads only: a standby's queue runs
		// admission too, but nothing it holds is ever tried again.
		st.SetLeading(true)
		if err := run(ctx, st); err != nil {
			logger.Error(err, "Cardinal status writers stopped")
		}
	}()
}

// waitLeading waits until the scheduler's lease is held by this process.
// kube-scheduler names its holder <hostname>_<random>, and cannot tell us
// the random part; replicas run on hosts of their own, so the host name
// tells which one leads.
func waitLeading(ctx context.Context, cfg *rest.Config, le componentbaseconfig.LeaderElectionConfiguration) error {
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		lease, err := client.CoordinationV1().Leases(le.ResourceNamespace).Get(ctx, le.ResourceName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		holder := lease.Spec.HolderIdentity
		return holder != nil && strings.HasPrefix(*holder, host+"_"), nil
	})
}

// inGang selects pods that name a PodGroup.
var inGang = func() *labels.Requirement {
	r, err := labels.NewRequirement(schedv1alpha1.PodGroupLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return r
}()

func run(ctx context.Context, st *state.State) error {
	ctrl.SetLogger(klog.NewKlogr().WithName("cardinal-controllers"))
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, schedv1alpha1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	queues, err := cardinalclient.NewForConfig(st.KubeConfig())
	if err != nil {
		return err
	}
	// Left empty, controller-runtime picks per type: protobuf for built-in
	// types (pods, decoded on every watch event) and JSON for custom
	// resources, which have no protobuf encoding.
	cfg := rest.CopyConfig(st.KubeConfig())
	cfg.ContentType, cfg.AcceptContentTypes = "", ""
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Only this scheduler's gang pods are cached (PodGroup status counts
		// nothing else), not every pod in the cluster: pods without a gang
		// cost this watch nothing.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Field: fields.OneTermEqualSelector("spec.schedulerName", st.Settings().SchedulerName),
				Label: labels.NewSelector().Add(*inGang),
			},
		}},
	})
	if err != nil {
		return err
	}
	if err := (&podgroupstatus.Reconciler{Client: mgr.GetClient(), SchedulerName: st.Settings().SchedulerName, State: st}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.Add(&queuestatus.Writer{State: st, Client: queues}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
