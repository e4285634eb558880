// Package controllers runs Cardinal's controllers inside the scheduler's
// process: the status writers, Queue status from the scheduler's own
// numbers (pkg/queuestatus) and PodGroup status from its pods
// (pkg/podgroupstatus); the reaper of gangs left bound below their min
// (pkg/stalegang); and the grouper, which makes the PodGroups of the
// workloads users run (pkg/grouper).
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
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// kube-scheduler's leader elector reports through it whether this
	// process leads.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/grouper"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/queuestatus"
	"cardinal.dev/cardinal/pkg/stalegang"
	"cardinal.dev/cardinal/pkg/state"
)

// Start runs the status writers in the background until ctx ends. They
// begin once a Cardinal plugin has attached st to the scheduler (and so
// knows how to reach the cluster) and, with leader election on, once this
// process leads the scheduler.
func Start(ctx context.Context, st *state.State, le componentbaseconfig.LeaderElectionConfiguration) {
	go func() {
		// Nothing here touches klog before the state is attached: Start runs
		// before kube-scheduler applies its logging options, which replace
		// klog's global logger without a lock, and a read of it meanwhile
		// crashed the process (a nil logger, exit status 2). A plugin
		// attaches the state only once kube-scheduler has set logging up.
		select {
		case <-st.AttachedC():
		case <-ctx.Done():
			return
		}
		logger := klog.FromContext(ctx).WithName("cardinal-controllers")
		if le.LeaderElect {
			logger.Info("Cardinal's status writers start when this process leads the scheduler, as leader_election_master_status reports (keep that metric enabled)", "lease", le.ResourceNamespace+"/"+le.ResourceName)
			if err := waitLeading(ctx); err != nil {
				return
			}
			logger.Info("This process leads the scheduler: starting Cardinal's status writers", "lease", le.ResourceNamespace+"/"+le.ResourceName)
		}
		// Metrics of the scheduling state and notes of gangs to write status
		// for come from the replica that leads only: a standby's queue runs
		// admission too, but nothing it holds is ever tried again.
		st.SetLeading(true)
		// A controller whose API cannot be read for long (a CRD installed
		// late, RBAC granted late) stops the manager; they start again, so
		// that the grouper, which pods wait for, is never gone for good.
		for backoff := restartAfter; ; backoff = min(2*backoff, maxRestartAfter) {
			runCtx, cancel := context.WithCancel(ctx)
			started := time.Now()
			err := run(runCtx, st)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if time.Since(started) > maxRestartAfter {
				backoff = restartAfter // it ran a while: a new failure, not the same one
			}
			logger.Error(err, "Cardinal's controllers stopped; starting them again", "after", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
	}()
}

// leadingPoll is how often a replica that does not lead looks whether it
// has come to.
const leadingPoll = 200 * time.Millisecond

// How soon Cardinal's controllers start again after they stop.
const (
	restartAfter    = 5 * time.Second
	maxRestartAfter = 2 * time.Minute
)

// waitLeading waits until this process holds the scheduler's lease.
// kube-scheduler names its holder <hostname>_<random> and cannot tell us
// the random part, so the lease alone does not say which of two replicas
// on one host leads; its leader elector reports in this process's own
// metrics registry when it does (leader_election_master_status, from
// component-base's client-go metrics provider, imported for that).
func waitLeading(ctx context.Context) error {
	// Pods of grouped workloads wait for the grouper, which starts here:
	// a new leader should not keep them long.
	return wait.PollUntilContextCancel(ctx, leadingPoll, true, func(context.Context) (bool, error) {
		return leadsHere(legacyregistry.DefaultGatherer), nil
	})
}

// schedulerElection is the name kube-scheduler's leader elector reports under.
const schedulerElection = "kube-scheduler"

// leadsHere reads leader_election_master_status{name="kube-scheduler"}
// from g: whether this process leads. A replica that never led has no
// such series.
func leadsHere(g metrics.Gatherer) bool {
	// A collector that fails still leaves the others' families.
	families, _ := g.Gather()
	for _, f := range families {
		if f.GetName() != "leader_election_master_status" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == schedulerElection {
					return m.GetGauge().GetValue() == 1
				}
			}
		}
	}
	return false
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
		Scheme: scheme,
		// The controllers are built again, under the same names, when the
		// manager starts again (Start).
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
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
	statuses := &podgroupstatus.Reconciler{Client: mgr.GetClient(), SchedulerName: st.Settings().SchedulerName, State: st}
	if st.ServesNativePodGroups() {
		// Buffered, so that a slow writer of one API's status does not
		// hold the other's notes.
		notes := make(chan event.TypedGenericEvent[*schedulingv1beta1.PodGroup], 256)
		statuses.NativeNotes = notes
		if err := (&podgroupstatus.NativeReconciler{Client: mgr.GetClient(), State: st, Notes: notes}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := statuses.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if kinds := st.Settings().GroupedKinds; len(kinds) > 0 {
		g := &grouper.Grouper{State: st, Kinds: kinds, SchedulerName: st.Settings().SchedulerName}
		if err := g.SetupWithManager(ctx, mgr); err != nil {
			return err
		}
	}
	if err := mgr.Add(&queuestatus.Writer{State: st, Client: queues}); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(st.KubeConfig())
	if err != nil {
		return err
	}
	if err := mgr.Add(&stalegang.Reaper{State: st, Client: kube, Pods: mgr.GetClient()}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
