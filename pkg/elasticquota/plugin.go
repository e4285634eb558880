// Package elasticquota is Cardinal's queue quota plugin, CardinalQueue:
// guarantee, capability, weighted deserved share and borrowing (SPEC §1.1,
// §3). Queue usage lives in pkg/queuecache, shared with the card quota
// plugin; this plugin feeds it from informers and charges it at Reserve.
package elasticquota

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controllers"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/gang"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	cardinalinformers "cardinal.dev/cardinal/pkg/generated/informers/externalversions"
	"cardinal.dev/cardinal/pkg/podgroups"
	"cardinal.dev/cardinal/pkg/queuecache"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalQueue"

// Plugin is the CardinalQueue scheduler plugin.
type Plugin struct {
	handle       fwk.Handle
	defaultQueue string
	cache        *queuecache.Cache
	classifier   *workload.Classifier
	holds        *gang.Holds
	podGroups    pglisters.PodGroupLister
	namespaces   corelisters.NamespaceLister

	// held remembers the last admission message per gang, so a held gang's
	// PodGroup gets an event when the reason changes, not once per pod.
	heldMu sync.Mutex
	held   map[gang.Key]string
}

var (
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Shared is what the plugin shares with the other Cardinal plugins.
type Shared struct {
	Queues     *queuecache.Cache
	Classifier *workload.Classifier
	// Controllers, when set, keeps Queue status; the plugin tells it the default queue.
	Controllers *controllers.Runner
	// PodGroups is the PodGroup informer every plugin reads.
	PodGroups *podgroups.Source
	// Holds are the gangs this plugin holds back, for the gang plugin to see.
	Holds *gang.Holds
}

// NewFactory returns the plugin's factory.
func NewFactory(shared Shared) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, shared)
	}
}

// New checks and validates the plugin's args, then starts feeding the queue
// cache from Queue, pod and PodGroup informers.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, shared Shared) (fwk.Plugin, error) {
	qc, classifier := shared.Queues, shared.Classifier
	args, ok := obj.(*config.CardinalQueueArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalQueueArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalQueueArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	// Custom resources have no protobuf encoding: their clients speak JSON.
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	cc, err := cardinalclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, pgLister, err := shared.PodGroups.Get(ctx, h.KubeConfig())
	if err != nil {
		return nil, err
	}
	queueFactory := cardinalinformers.NewSharedInformerFactory(cc, 0)
	kube := h.SharedInformerFactory()
	p := &Plugin{
		handle:       h,
		defaultQueue: args.DefaultQueue,
		cache:        qc,
		classifier:   classifier,
		holds:        shared.Holds,
		podGroups:    pgLister,
		namespaces:   kube.Core().V1().Namespaces().Lister(),
		held:         map[gang.Key]string{},
	}
	classifier.SetOwnerListers(workload.OwnerListers{
		ReplicaSets:  kube.Apps().V1().ReplicaSets().Lister(),
		Deployments:  kube.Apps().V1().Deployments().Lister(),
		StatefulSets: kube.Apps().V1().StatefulSets().Lister(),
		DaemonSets:   kube.Apps().V1().DaemonSets().Lister(),
		Jobs:         kube.Batch().V1().Jobs().Lister(),
		CronJobs:     kube.Batch().V1().CronJobs().Lister(),
	})
	if _, err := queueFactory.Scheduling().V1alpha1().Queues().Informer().AddEventHandler(p.queueHandler()); err != nil {
		return nil, err
	}
	queueFactory.Start(ctx.Done())
	for typ, ok := range queueFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	if err := ensureQueue(ctx, cc, args.DefaultQueue); err != nil {
		return nil, err
	}
	if shared.Controllers != nil {
		shared.Controllers.SetDefaultQueue(args.DefaultQueue)
		shared.Controllers.Start(ctx, h.KubeConfig(), h.ProfileName())
	}
	// Pods last: resolving a pod's queue reads PodGroups and namespaces.
	if _, err := kube.Core().V1().Pods().Informer().AddEventHandler(p.podHandler()); err != nil {
		return nil, err
	}
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// QueueOf resolves a pod's queue (SPEC §1.1) and returns its PodGroup's labels too.
func (p *Plugin) QueueOf(pod *corev1.Pod) (string, map[string]string) {
	var nsLabels map[string]string
	pgLabels := p.podGroupLabels(pod)
	if ns, err := p.namespaces.Get(pod.Namespace); err == nil {
		nsLabels = ns.Labels
	}
	return workload.QueueName(pgLabels, pod.Labels, nsLabels, p.defaultQueue), pgLabels
}

// podInfo is what the cache charges a pod, with its preemptibility; warning
// says when its preemptibility label was invalid.
func (p *Plugin) podInfo(pod *corev1.Pod) (queuecache.PodInfo, workload.Preemptibility, string) {
	queue, pgLabels := p.QueueOf(pod)
	pre, warning := p.classifier.Of(pod, pgLabels)
	k, _ := gang.Of(pod)
	return queuecache.PodInfo{
		Queue:          queue,
		Request:        quota.PodRequests(pod),
		NonPreemptible: pre != workload.Preemptible,
		Gang:           k,
	}, pre, warning
}

func (p *Plugin) podHandler() cache.ResourceEventHandler {
	ours := func(pod *corev1.Pod) bool { return pod.Spec.SchedulerName == p.handle.ProfileName() }
	upsert := func(pod *corev1.Pod) {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			p.cache.RemovePodIfPresent(pod.UID)
			return
		}
		info, _, _ := p.podInfo(pod)
		p.cache.AddPodIfAbsent(pod, info, pod.Spec.NodeName != "")
	}
	return eventhandler.For(ours, upsert, func(pod *corev1.Pod) { p.cache.RemovePodIfPresent(pod.UID) })
}

func (p *Plugin) queueHandler() cache.ResourceEventHandler {
	return eventhandler.For(nil, p.cache.UpsertQueue, func(q *v1alpha1.Queue) { p.cache.DeleteQueue(q.Name) })
}

// ensureQueue creates the default queue if it does not exist, as Volcano
// does, so pods that name no queue run without setup: it has weight 1, no
// guarantee and no cap. A queue an administrator created is left as it is.
func ensureQueue(ctx context.Context, cc cardinalclient.Interface, name string) error {
	_, err := cc.SchedulingV1alpha1().Queues().Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{Weight: 1}}
	if _, err := cc.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default queue %s: %w", name, err)
	}
	return nil
}
