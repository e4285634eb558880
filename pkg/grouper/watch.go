package grouper

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/workload"
)

// cacheInformer is an informer the grouper adds handlers to: the
// scheduler's, which outlive the grouper's controller.
type cacheInformer interface {
	AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(cache.ResourceEventHandlerRegistration) error
}

// handleUntil adds h to inf until ctx ends, when the controller it feeds
// stops (and may be started again with a handler of its own).
func handleUntil(ctx context.Context, inf cacheInformer, h cache.ResourceEventHandler) error {
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = inf.RemoveEventHandler(reg)
	}()
	return nil
}

// watch asks for the pods the grouper may group as they come and change,
// and, when a workload changes, for one pod of each PodGroup made for it;
// and starts reading the custom workload kinds the cluster serves.
func (g *Grouper) watch(ctx context.Context, pods, podGroups cacheInformer, workloads []cacheInformer, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	podChanged := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && (g.Kinds.Groupable(p, g.SchedulerName) || unlabelledBound(p)) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}
	if err := handleUntil(ctx, pods, cache.ResourceEventHandlerFuncs{
		AddFunc:    podChanged,
		UpdateFunc: func(_, obj any) { podChanged(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				g.unseen.forget(p.UID)
				if k, asked := g.mends.LoadAndDelete(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); asked {
					if k, ok := k.(gang.Key); ok {
						g.askToMend(p, k, q) // passed on by its reconcile, now it is gone
					}
				}
			}
		},
	}); err != nil {
		return err
	}
	// A PodGroup the grouper made, deleted while its pods wait, is made
	// again (mend), or its pods ruled on anew if their workload no longer
	// asks for it; one made is checked against its workload as it is now
	// (a reconcile that read it before a change may have made it): one of
	// its pods is asked for.
	if err := handleUntil(ctx, podGroups, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.askForMember(obj, q) },
		DeleteFunc: func(obj any) { g.askForMember(obj, q) },
	}); err != nil {
		return err
	}
	changed := func(obj any) {
		if o, ok := obj.(metav1.Object); ok {
			g.workloadChanged(ctx, o, q)
		}
	}
	for _, inf := range workloads {
		if err := handleUntil(ctx, inf, cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) { changed(obj) }}); err != nil {
			return err
		}
	}
	g.reader.onChange = func(u *unstructured.Unstructured) { g.workloadChanged(ctx, u, q) }
	go g.reader.run(ctx)
	return nil
}

// workloadChanged asks for one pod of each PodGroup the grouper made for
// obj, for the workloads above it (a Job's JobSet and TrainJob), and, for
// a Deployment, for its ReplicaSets: its PodGroups are then mended from
// the workload as it is now (mend).
func (g *Grouper) workloadChanged(ctx context.Context, obj metav1.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	uids := []types.UID{obj.GetUID()}
	ns := obj.GetNamespace()
	ref := metav1.GetControllerOfNoCopy(obj)
	for depth := 0; ref != nil && depth < maxDepth; depth++ {
		uids = append(uids, ref.UID)
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			break
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
		if !g.reader.Knows(gk) {
			break
		}
		up, err := g.reader.Get(gk, ns, ref.Name)
		if err != nil {
			break
		}
		ref = metav1.GetControllerOfNoCopy(up)
	}
	if _, isDeployment := obj.(*appsv1.Deployment); isDeployment && g.Kinds[workload.Deployment] {
		uids = append(uids, g.replicaSetsOf(obj)...)
	}
	for _, uid := range uids {
		pgs, err := g.podGroups.ByIndex(ownerIndex, ownerKey(ns, uid))
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Listing the PodGroups of a workload", "err", err)
			continue
		}
		for _, obj := range pgs {
			pg, ok := obj.(*schedv1alpha1.PodGroup)
			if !ok || pg.Namespace != ns {
				continue
			}
			k := gang.KeyOf(pg)
			if p := g.State.GangMember(k); p != nil {
				g.askToMend(p, k, q)
			}
		}
	}
}

// replicaSetsOf are the UIDs of the ReplicaSets Deployment obj controls:
// its min-member annotation is read for their gangs.
func (g *Grouper) replicaSetsOf(obj metav1.Object) []types.UID {
	rss, err := g.State.KubeInformers().Apps().V1().ReplicaSets().Lister().ReplicaSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []types.UID
	for _, rs := range rss {
		if c := metav1.GetControllerOfNoCopy(rs); c != nil && c.UID == obj.GetUID() {
			out = append(out, rs.UID)
		}
	}
	return out
}
