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
	"cardinal.dev/cardinal/pkg/workload"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalQueue"

// Plugin is the CardinalQueue scheduler plugin.
type Plugin struct {
	handle     fwk.Handle
	cache      *queuecache.Cache
	classifier *workload.Classifier
	holds      *gang.Holds
	podGroups  pglisters.PodGroupLister
	resolver   *workload.Resolver
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
	// Resolver finds pods' queues; this plugin sets it up from its args.
	Resolver *workload.Resolver
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
	resolver := shared.Resolver
	if resolver == nil {
		resolver = &workload.Resolver{}
	}
	resolver.Init(pgLister, kube.Core().V1().Namespaces().Lister(), args.DefaultQueue)
	p := &Plugin{
		handle:     h,
		cache:      qc,
		classifier: classifier,
		holds:      shared.Holds,
		podGroups:  pgLister,
		resolver:   resolver,
	}
	classifier.SetOwnerListers(workload.OwnerListers{
		ReplicaSets:  kube.Apps().V1().ReplicaSets().Lister(),
		Deployments:  kube.Apps().V1().Deployments().Lister(),
		StatefulSets: kube.Apps().V1().StatefulSets().Lister(),
		DaemonSets:   kube.Apps().V1().DaemonSets().Lister(),
		Jobs:         kube.Batch().V1().Jobs().Lister(),
		CronJobs:     kube.Batch().V1().CronJobs().Lister(),
	})
	reg, err := queueFactory.Scheduling().V1alpha1().Queues().Informer().AddEventHandler(p.queueHandler())
	if err != nil {
		return nil, err
	}
	qc.AddSource(reg.HasSynced)
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
	// A pod seen before its namespace is charged to the wrong queue until
	// the namespace arrives; a namespace relabelled moves its pods.
	reg, err = kube.Core().V1().Namespaces().Informer().AddEventHandler(eventhandler.For(nil, p.reresolve, func(*corev1.Namespace) {}))
	if err != nil {
		return nil, err
	}
	qc.AddSource(reg.HasSynced)
	// Pods last: resolving a pod's queue reads PodGroups and namespaces.
	reg, err = kube.Core().V1().Pods().Informer().AddEventHandler(p.podHandler())
	if err != nil {
		return nil, err
	}
	qc.AddSource(reg.HasSynced)
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// QueueOf resolves a pod's queue (SPEC §1.1) and returns its PodGroup's labels too.
func (p *Plugin) QueueOf(pod *corev1.Pod) (string, map[string]string) {
	return p.resolver.QueueOf(pod)
}

// podInfo is what the cache charges a pod, with its preemptibility; warning
// says when its preemptibility label was invalid.
func (p *Plugin) podInfo(pod *corev1.Pod) (queuecache.PodInfo, workload.Preemptibility, string) {
	queue, pgLabels := p.QueueOf(pod)
	pre, warning := p.classifier.Of(pod, pgLabels)
	k, _ := gang.Of(pod)
	return queuecache.PodInfo{
		Queue:          queue,
		Request:        p.cache.Request(pod),
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
		p.cache.AddPodIfAbsent(pod, info, pod.Spec.NodeName)
	}
	return eventhandler.For(ours, upsert, func(pod *corev1.Pod) { p.cache.RemovePodIfPresent(pod.UID) })
}

// reresolve charges the pods of a namespace again, to the queue its labels
// now give them.
func (p *Plugin) reresolve(ns *corev1.Namespace) {
	for _, pod := range p.cache.PodsIn(ns.Name) {
		info, _, _ := p.podInfo(pod)
		p.cache.UpdatePodIfPresent(pod, info)
	}
}

// queueHandler records Queues; a Queue whose volcano.sh/card.quota
// annotation cannot be read gets an event that says how to fix it, once
// per distinct problem (status writes update the Queue all the time).
func (p *Plugin) queueHandler() cache.ResourceEventHandler {
	var mu sync.Mutex
	reported := map[string]string{}
	upsert := func(q *v1alpha1.Queue) {
		err := p.cache.UpsertQueue(q)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		mu.Lock()
		changed := reported[q.Name] != msg
		reported[q.Name] = msg
		mu.Unlock()
		if err != nil && changed {
			ref := &corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Queue", Name: q.Name, UID: q.UID}
			p.handle.EventRecorder().Eventf(ref, nil, corev1.EventTypeWarning, "InvalidCardQuota", "Admission", "%v", err)
		}
	}
	return eventhandler.For(nil, upsert, func(q *v1alpha1.Queue) { p.cache.DeleteQueue(q.Name) })
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
