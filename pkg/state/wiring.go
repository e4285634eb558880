package state

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"

	"cardinal.dev/cardinal/pkg/eventhandler"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	cardinalinformers "cardinal.dev/cardinal/pkg/generated/informers/externalversions"
	"cardinal.dev/cardinal/pkg/workload"
)

// How the state is wired to the scheduler: the clients and listers it
// reads, the informers that feed it, the default Queue, and the goroutines
// that act for it (the outbox, the backstop tick). None of it decides
// anything; the informer handlers it registers are in feed.go.

// wiring is the state's connection to the scheduler and the cluster.
type wiring struct {
	attachOnce sync.Once
	attachErr  error
	attached   atomic.Bool
	// attachedC is closed once the state is attached.
	attachedC chan struct{}
	kube      kubeAccess
	sources   []source
	// missing are the optional APIs the state cannot read, and why (apis.go).
	missing map[string]string
	// noCRD: a missing API's CRD is not installed (rather than RBAC).
	noCRD  map[string]bool
	synced atomic.Bool
	// preemption: CardinalPreemption runs in the profile (preempt.go).
	preemption atomic.Bool
	// native: Kubernetes' own PodGroups are read (native.go).
	native atomic.Bool
	// permitPlugin is the plugin whose Permit holds gangs' members.
	permitPlugin string
}

func newWiring() wiring {
	return wiring{missing: map[string]string{}, noCRD: map[string]bool{}, attachedC: make(chan struct{})}
}

// kubeAccess is how the state reaches the cluster, set once by Attach.
type kubeAccess struct {
	config *rest.Config
	// informers are the scheduler's own, which the grouper reads too.
	informers informers.SharedInformerFactory
	owners    workload.Owners
	pods      corelisters.PodLister
	// podGroups is the state's informer of scheduler-plugins PodGroups,
	// which the grouper reads too.
	podGroups cache.SharedIndexInformer
	// claims are the ResourceClaims DynamicResources reads too, nil when
	// it reads none (resourceclaims.go).
	claims resourcelisters.ResourceClaimLister
	// ensureDefaultQueue creates the default queue if it is missing.
	ensureDefaultQueue func()
}

// tickEvery is how often the backstop (tick) runs.
const tickEvery = 2 * time.Second

// Attach connects the state to the scheduler the first time a Cardinal
// plugin is built: it feeds the state from the scheduler's informers (pods,
// nodes, namespaces, top-level owners) and its own PodGroup and Queue
// informers, creates the default queue when missing, and starts the
// goroutine that acts on the scheduling queue for it. Later calls return
// the first call's result.
func (s *State) Attach(ctx context.Context, h fwk.Handle) error {
	s.wiring.attachOnce.Do(func() { s.wiring.attachErr = s.attach(ctx, h) })
	return s.wiring.attachErr
}

func (s *State) attach(ctx context.Context, h fwk.Handle) error {
	if name := s.settings.SchedulerName; h.ProfileName() != name {
		return fmt.Errorf("Cardinal's plugins are configured for profile %s and cannot also run in profile %s: enable them in one profile only", name, h.ProfileName())
	}
	cc, pgc, err := s.connect(h)
	if err != nil {
		return err
	}
	if !s.settings.ReadOnly {
		s.startDefaultQueue(ctx, cc)
	}
	// PodGroups, Queues and namespaces before pods: a pod's queue is read
	// from them. The scheduler starts its own informers (pods, nodes,
	// namespaces) after the plugins are built; ours start here.
	pgFactory := PodGroupInformers(pgc)
	s.wiring.kube.podGroups = pgFactory.Scheduling().V1alpha1().PodGroups().Informer()
	queueFactory := QueueInformers(cc)
	var d discovery.DiscoveryInterface
	if h.ClientSet() != nil {
		d = h.ClientSet().Discovery()
	}
	if err := s.register(ctx, h.SharedInformerFactory(), d, pgFactory, queueFactory); err != nil {
		return err
	}
	pgFactory.Start(ctx.Done())
	queueFactory.Start(ctx.Done())
	s.wiring.attached.Store(true)
	close(s.wiring.attachedC)
	var fw Framework = h
	if s.settings.ReadOnly {
		fw = discard{}
	}
	go s.runOutbox(ctx, fw)
	go s.runTicks(ctx, time.Now())
	return nil
}

// connect records the listers the state reads and returns the clients of
// Cardinal's and scheduler-plugins' custom resources.
func (s *State) connect(h fwk.Handle) (*cardinalclient.Clientset, *pgclient.Clientset, error) {
	// Custom resources have no protobuf encoding: their clients speak JSON.
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	kube := h.SharedInformerFactory()
	s.wiring.kube = kubeAccess{
		config:    cfg,
		informers: kube,
		pods:      kube.Core().V1().Pods().Lister(),
		owners: workload.Owners{
			ReplicaSets:  kube.Apps().V1().ReplicaSets().Lister(),
			Deployments:  kube.Apps().V1().Deployments().Lister(),
			StatefulSets: kube.Apps().V1().StatefulSets().Lister(),
			DaemonSets:   kube.Apps().V1().DaemonSets().Lister(),
			Jobs:         kube.Batch().V1().Jobs().Lister(),
			CronJobs:     kube.Batch().V1().CronJobs().Lister(),
		},
	}
	if s.readsClaims() {
		s.wiring.kube.claims = kube.Resource().V1().ResourceClaims().Lister()
	}
	cc, err := cardinalclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	pgc, err := pgclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cc, pgc, nil
}

// readsClaims tells whether the state reads ResourceClaims: when
// kube-scheduler's DynamicResources does (its feature gate on), and not in
// a tool's read-only copy, where only scheduling gates hold a member.
func (s *State) readsClaims() bool {
	return !s.settings.ReadOnly && utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation)
}

// startDefaultQueue creates the default queue if it does not exist.
// Without the Queue CRD or the right to it, it is created once Queues can
// be read (apis.go); a kube-apiserver restarting or slow to answer must not
// stop the scheduler from starting: it tries again in the background.
func (s *State) startDefaultQueue(ctx context.Context, cc *cardinalclient.Clientset) {
	s.wiring.kube.ensureDefaultQueue = func() {
		if err := ensureQueue(ctx, cc, s.settings.DefaultQueue); err != nil {
			klog.FromContext(ctx).Error(err, "Creating the default queue", "queue", s.settings.DefaultQueue)
		}
	}
	if err := ensureQueue(ctx, cc, s.settings.DefaultQueue); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		klog.FromContext(ctx).Error(err, "Creating the default queue; trying again in the background", "queue", s.settings.DefaultQueue)
		go s.retryDefaultQueue(ctx, cc)
	}
}

// register adds the state's handlers to the informers it is fed by.
func (s *State) register(ctx context.Context, kube informers.SharedInformerFactory, discovery discovery.DiscoveryInterface, pgFactory pginformers.SharedInformerFactory, queueFactory cardinalinformers.SharedInformerFactory) error {
	handlers := []handlerOf{
		{pgFactory.Scheduling().V1alpha1().PodGroups().Informer(), eventhandler.For(nil, s.OnPodGroup, s.OnPodGroupGone), podGroupsAPI},
		{queueFactory.Scheduling().V1alpha1().Queues().Informer(), eventhandler.For(nil, s.OnQueue, s.OnQueueGone), queuesAPI},
		{kube.Core().V1().Namespaces().Informer(), eventhandler.For(nil, s.OnNamespace, s.onNamespaceGone), ""},
		{kube.Core().V1().Nodes().Informer(), eventhandler.For(nil, s.OnNode, s.OnNodeGone), ""},
		{kube.Core().V1().Pods().Informer(), eventhandler.For(nil, s.OnPod, s.OnPodDeleted), ""},
		// Top-level owners whose label sets their pods' preemptibility.
		{kube.Apps().V1().ReplicaSets().Informer(), s.ownerHandler(), ""},
		{kube.Apps().V1().Deployments().Informer(), s.ownerHandler(), ""},
		{kube.Apps().V1().StatefulSets().Informer(), s.ownerHandler(), ""},
		{kube.Apps().V1().DaemonSets().Informer(), s.ownerHandler(), ""},
		{kube.Batch().V1().Jobs().Informer(), s.ownerHandler(), ""},
		{kube.Batch().V1().CronJobs().Informer(), s.ownerHandler(), ""},
	}
	if s.readsClaims() {
		handlers = append(handlers, handlerOf{kube.Resource().V1().ResourceClaims().Informer(), s.claimHandler(), ""})
	}
	handlers = append(handlers, s.nativeHandler(ctx, kube, discovery)...)
	sources := make([]source, 0, len(handlers))
	for _, hd := range handlers {
		if hd.api != "" {
			if err := s.watchMissing(ctx, hd.api, hd.informer); err != nil {
				return err
			}
		}
		reg, err := hd.informer.AddEventHandler(hd.handler)
		if err != nil {
			return err
		}
		sources = append(sources, source{api: hd.api, synced: reg.HasSynced})
	}
	s.mu.Lock()
	s.wiring.sources = sources
	s.mu.Unlock()
	return nil
}

// runTicks wakes the pods turned away before the state synced as soon as
// it has, then ticks (tickEvery) until ctx ends.
func (s *State) runTicks(ctx context.Context, started time.Time) {
	if s.WaitForSync(ctx) == nil {
		s.mu.RLock()
		pods, nodes := len(s.books.pods), len(s.books.nodes)
		s.mu.RUnlock()
		klog.FromContext(ctx).Info("Cardinal's state synced", "pods", pods, "nodes", nodes, "after", time.Since(started))
		s.tick()
	}
	wait.Until(s.tick, tickEvery, ctx.Done())
}

// KubeConfig is the scheduler's client configuration (JSON, for custom
// resources), once Attach has run; the status writers use it.
func (s *State) KubeConfig() *rest.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.wiring.kube.config
}

// KubeInformers are the scheduler's informers, once Attach has run: pods,
// nodes, namespaces and the workloads the state reads owners from. The
// grouper reads them rather than cache them twice; it adds no informer.
func (s *State) KubeInformers() informers.SharedInformerFactory {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.wiring.kube.informers
}

// PodGroupInformer is the state's informer of scheduler-plugins PodGroups,
// once Attach has run: the grouper reads and watches PodGroups through it,
// so it waits for no cache of its own to sync before ruling on pods.
func (s *State) PodGroupInformer() cache.SharedIndexInformer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.wiring.kube.podGroups
}

// Attached tells whether a Cardinal plugin has attached the state.
func (s *State) Attached() bool { return s.wiring.attached.Load() }

// AttachedC is closed once a Cardinal plugin has attached the state.
func (s *State) AttachedC() <-chan struct{} { return s.wiring.attachedC }
