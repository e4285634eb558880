package grouper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"cardinal.dev/cardinal/pkg/workload"
)

// rediscoverEvery is how often the reader looks again for the kinds the
// cluster serves and the scheduler may read: a CRD installed, or RBAC
// granted, after the scheduler started is read from then on.
const rediscoverEvery = 30 * time.Second

// reader reads the owners on pods' chains: Kubernetes' own workloads from
// the scheduler's informers (nothing is cached twice), other projects'
// workloads from informers it starts for the kinds the cluster serves and
// the scheduler may list and watch.
type reader struct {
	builtin map[schema.GroupKind]func(namespace, name string) (runtime.Object, error)
	// listed tells whether the informer of a Kubernetes kind has listed:
	// until it has, an owner missing from it is not known to be gone.
	listed map[schema.GroupKind]cache.InformerSynced
	jobs   func(namespace string) ([]runtime.Object, error)
	// wanted are the custom kinds to read: those grouped, and those a
	// grouped kind's pods reach through (a TrainJob's JobSet, a RayJob's
	// RayCluster).
	wanted []schema.GroupKind

	kube    kubernetes.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	dynamic dynamicinformer.DynamicSharedInformerFactory
	// onChange is called with each custom workload added or changed.
	onChange func(obj *unstructured.Unstructured)

	// kick asks run to look for the custom kinds now.
	kick chan struct{}

	mu     sync.RWMutex
	custom map[schema.GroupKind]*customKind
}

// customKind is one wanted custom kind: its resource and informer once
// the cluster serves it, or why the scheduler may not read it, or since
// when the cluster has not served it.
type customKind struct {
	resource    schema.GroupVersionResource
	informer    informers.GenericInformer
	unreadable  *Unreadable
	absentSince time.Time
}

// absentFor is how long a kind found not served is taken as such: an owner
// of that kind met later may come of a CRD installed since, and is looked
// for again.
const absentFor = 5 * time.Second

// errNotYet is an owner of a kind the reader has not read yet: not looked
// for, or its informer not synced. The walk is tried again.
var errNotYet = errors.New("its kind is not read yet")

// newReader reads Kubernetes' kinds from f, the scheduler's informers, and
// the custom kinds kinds needs through clients of cfg.
func newReader(f informers.SharedInformerFactory, kube kubernetes.Interface, dyn dynamic.Interface, d discovery.DiscoveryInterface, kinds workload.Kinds) *reader {
	apps, batch, core := f.Apps().V1(), f.Batch().V1(), f.Core().V1()
	r := &reader{
		builtin: map[schema.GroupKind]func(string, string) (runtime.Object, error){
			workload.Job:        func(ns, n string) (runtime.Object, error) { return batch.Jobs().Lister().Jobs(ns).Get(n) },
			workload.CronJob:    func(ns, n string) (runtime.Object, error) { return batch.CronJobs().Lister().CronJobs(ns).Get(n) },
			workload.ReplicaSet: func(ns, n string) (runtime.Object, error) { return apps.ReplicaSets().Lister().ReplicaSets(ns).Get(n) },
			workload.Deployment: func(ns, n string) (runtime.Object, error) { return apps.Deployments().Lister().Deployments(ns).Get(n) },
			workload.StatefulSet: func(ns, n string) (runtime.Object, error) {
				return apps.StatefulSets().Lister().StatefulSets(ns).Get(n)
			},
			// A LeaderWorkerSet's worker StatefulSet is controlled by its
			// group's leader pod.
			workload.PodKind: func(ns, n string) (runtime.Object, error) { return core.Pods().Lister().Pods(ns).Get(n) },
		},
		listed: map[schema.GroupKind]cache.InformerSynced{
			workload.Job:         batch.Jobs().Informer().HasSynced,
			workload.CronJob:     batch.CronJobs().Informer().HasSynced,
			workload.ReplicaSet:  apps.ReplicaSets().Informer().HasSynced,
			workload.Deployment:  apps.Deployments().Informer().HasSynced,
			workload.StatefulSet: apps.StatefulSets().Informer().HasSynced,
			workload.PodKind:     core.Pods().Informer().HasSynced,
		},
		jobs: func(ns string) ([]runtime.Object, error) {
			jobs, err := batch.Jobs().Lister().Jobs(ns).List(labels.Everything())
			out := make([]runtime.Object, len(jobs))
			for i, j := range jobs {
				out[i] = j
			}
			return out, err
		},
		kube:   kube,
		kick:   make(chan struct{}, 1),
		custom: map[schema.GroupKind]*customKind{},
	}
	if d != nil {
		r.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d))
	}
	if dyn != nil {
		r.dynamic = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).(dynamicinformer.DynamicSharedInformerFactory)
	}
	for gk := range kinds {
		if _, ok := r.builtin[gk]; !ok {
			r.wanted = append(r.wanted, gk)
		}
	}
	if kinds[workload.TrainJob] && !kinds[workload.JobSet] {
		r.wanted = append(r.wanted, workload.JobSet)
	}
	if kinds[workload.RayJob] && !kinds[workload.RayCluster] {
		r.wanted = append(r.wanted, workload.RayCluster)
	}
	return r
}

// Knows tells whether gk is read: Kubernetes' kinds always, a wanted
// custom kind unless the cluster was just found not to serve it. One not
// looked for yet is known: Get then says it is not read yet, and the walk
// is tried again once it is, so no pod of it is ruled on before.
func (r *reader) Knows(gk schema.GroupKind) bool {
	if _, ok := r.builtin[gk]; ok {
		return true
	}
	if !slices.Contains(r.wanted, gk) {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	ck := r.custom[gk]
	return ck == nil || ck.absentSince.IsZero() || time.Since(ck.absentSince) > absentFor
}

// Reads tells whether gk is a kind the reader reads at all: Kubernetes'
// own, or a wanted custom kind.
func (r *reader) Reads(gk schema.GroupKind) bool {
	_, builtin := r.builtin[gk]
	return builtin || slices.Contains(r.wanted, gk)
}

// Absent tells whether gk is a wanted custom kind the cluster was last
// found not to serve (its CRD not installed, or removed): no object of it
// exists.
func (r *reader) Absent(gk schema.GroupKind) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ck := r.custom[gk]
	return ck != nil && !ck.absentSince.IsZero()
}

// Get reads namespace/name of kind gk, as an unstructured object with its
// apiVersion and kind set.
func (r *reader) Get(gk schema.GroupKind, namespace, name string) (*unstructured.Unstructured, error) {
	if get, ok := r.builtin[gk]; ok {
		if listed := r.listed[gk]; listed != nil && !listed() {
			return nil, fmt.Errorf("%s: %w", gk, errNotYet)
		}
		obj, err := get(namespace, name)
		if err != nil {
			return nil, err
		}
		return toUnstructured(obj, gk)
	}
	r.mu.RLock()
	ck := r.custom[gk]
	r.mu.RUnlock()
	switch {
	case ck == nil || !ck.absentSince.IsZero():
		r.lookAgain()
		return nil, fmt.Errorf("%s: %w", gk, errNotYet)
	case ck.unreadable != nil:
		return nil, ck.unreadable
	case !ck.informer.Informer().HasSynced():
		return nil, fmt.Errorf("%s: %w", gk, errNotYet)
	}
	obj, err := ck.informer.Lister().ByNamespace(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: not unstructured: %T", gk, namespace, name, obj)
	}
	return u, nil
}

// jobsOf lists the Jobs owner (a JobSet) controls.
func (r *reader) jobsOf(owner *unstructured.Unstructured) []*unstructured.Unstructured {
	jobs, err := r.jobs(owner.GetNamespace())
	if err != nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, j := range jobs {
		m, err := metaOf(j)
		if err != nil {
			continue
		}
		if c := metav1.GetControllerOfNoCopy(m); c != nil && c.UID == owner.GetUID() {
			if u, err := toUnstructured(j, workload.Job); err == nil {
				out = append(out, u)
			}
		}
	}
	return out
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// toUnstructured converts a typed object of kind gk from an informer
// (whose type meta is empty) to an unstructured one.
func toUnstructured(obj runtime.Object, gk schema.GroupKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(schema.GroupVersion{Group: gk.Group, Version: "v1"}.String())
	u.SetKind(gk.Kind)
	return u, nil
}

// lookAgain asks run to look for the custom kinds now.
func (r *reader) lookAgain() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run looks for the custom kinds the cluster serves now and starts
// reading those it may, every rediscoverEvery and when asked, until ctx
// ends.
func (r *reader) run(ctx context.Context) {
	for {
		r.discover(ctx)
		select {
		case <-ctx.Done():
			if r.dynamic != nil {
				r.dynamic.Shutdown()
			}
			return
		case <-time.After(rediscoverEvery):
		case <-r.kick:
		}
	}
}

// discover starts an informer for each wanted custom kind that the
// cluster has come to serve and the scheduler may list and watch, and
// records why it may not for the others.
func (r *reader) discover(ctx context.Context) {
	if r.mapper == nil || r.dynamic == nil {
		return
	}
	logger := klog.FromContext(ctx)
	r.mapper.Reset()
	started := false
	for _, gk := range r.wanted {
		r.mu.RLock()
		ck := r.custom[gk]
		r.mu.RUnlock()
		if ck != nil && ck.informer != nil {
			continue // read already
		}
		m, err := r.mapper.RESTMapping(gk)
		if err != nil {
			// Not served (its CRD not installed): skipped.
			r.mu.Lock()
			if ck == nil || !ck.absentSince.IsZero() {
				r.custom[gk] = &customKind{absentSince: time.Now()}
			}
			r.mu.Unlock()
			continue
		}
		next := &customKind{resource: m.Resource}
		if why := r.mayNotRead(ctx, m.Resource); why != "" {
			next.unreadable = &Unreadable{Kind: gk, Resource: m.Resource.Resource, Why: why}
			if ck == nil || ck.unreadable == nil {
				logger.Info("Cardinal may not read a workload kind it groups; its pods are gangs of one until it may", "kind", gk.String(), "why", why)
			}
		} else {
			next.informer = r.dynamic.ForResource(m.Resource)
			// Only what the grouper reads is kept: a tenant's thousands of
			// large objects cost their metadata and spec, not their status,
			// managed fields or last-applied copies.
			if err := next.informer.Informer().SetTransform(trim); err != nil {
				logger.Error(err, "Trimming a workload kind's cached objects", "kind", gk.String())
			}
			if _, err := next.informer.Informer().AddEventHandler(r.changeHandler()); err != nil {
				logger.Error(err, "Watching a workload kind", "kind", gk.String())
				continue
			}
			started = true
			logger.Info("Grouping the pods of a workload kind the cluster serves", "kind", gk.String(), "resource", m.Resource.String())
		}
		r.mu.Lock()
		r.custom[gk] = next
		r.mu.Unlock()
	}
	if started {
		r.dynamic.Start(ctx.Done())
	}
}

// mayNotRead says why the scheduler may not list and watch resource, ""
// if it may.
func (r *reader) mayNotRead(ctx context.Context, gvr schema.GroupVersionResource) string {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: gvr.Group, Resource: gvr.Resource, Verb: verb},
		}}
		got, err := r.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Sprintf("asking whether it may %s it: %v", verb, err)
		}
		if !got.Status.Allowed {
			return "it may not " + verb + " it"
		}
	}
	return ""
}

// changeHandler passes custom workloads added or changed to onChange.
func (r *reader) changeHandler() cache.ResourceEventHandler {
	pass := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok && r.onChange != nil {
			r.onChange(u)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: pass, UpdateFunc: func(_, obj any) { pass(obj) }}
}

// trim drops what the grouper never reads from a cached custom workload.
func trim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "status")
	if a := u.GetAnnotations(); a != nil {
		if _, ok := a[lastApplied]; ok {
			delete(a, lastApplied)
			u.SetAnnotations(a)
		}
	}
	return u, nil
}

// lastApplied is kubectl apply's copy of the object, as large as it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
