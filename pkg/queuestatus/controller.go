package queuestatus

import (
	"context"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// all is the one key the controller reconciles: deserved shares tie every
// queue to every other, so they are computed together.
var all = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all-queues"}}

// minInterval bounds how often statuses are recomputed. Every pod event
// maps to the one key and a recompute reads every pod, so without it a burst
// of binds costs a full pass per bind (16% of the scheduler's CPU in the
// gangs benchmark); with it, statuses lag the cluster by at most a second.
const minInterval = time.Second

// Reconciler writes every Queue's status. It reads pods from a cache that
// holds only this scheduler's pods.
type Reconciler struct {
	client.Client
	// DefaultQueue returns the queue of pods that name none.
	DefaultQueue func() string
	// last is when statuses were last computed (one worker: no lock).
	last time.Time
}

// SetupWithManager reconciles all queues when a Queue, a pod, a node, a
// namespace or a PodGroup changes; the work queue folds bursts into one run.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{all}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("queue-status").
		Watches(&v1alpha1.Queue{}, toAll).
		Watches(&corev1.Pod{}, toAll).
		Watches(&corev1.Node{}, toAll).
		Watches(&corev1.Namespace{}, toAll).
		Watches(&schedv1alpha1.PodGroup{}, toAll).
		Complete(r)
}

// Reconcile recomputes and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if wait := minInterval - time.Since(r.last); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	r.last = time.Now()
	var queues v1alpha1.QueueList
	var pods corev1.PodList
	var nodes corev1.NodeList
	var namespaces corev1.NamespaceList
	var groups schedv1alpha1.PodGroupList
	for _, l := range []client.ObjectList{&queues, &pods, &nodes, &namespaces, &groups} {
		// Read-only: no copy of every pod per pass; a Queue is copied before it is updated.
		if err := r.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return reconcile.Result{}, err
		}
	}
	in := Input{Queues: queues.Items, Capacity: quota.Resources{}, Allocated: map[string]quota.Resources{}, Pending: map[string]quota.Resources{}, Cards: map[string]map[string]int64{}}
	models := make(map[string]cardmodel.Node, len(nodes.Items))
	for i := range nodes.Items {
		in.Capacity.Add(quota.FromList(nodes.Items[i].Status.Allocatable))
		models[nodes.Items[i].Name] = cardmodel.Detect(&nodes.Items[i])
	}
	delete(in.Capacity, corev1.ResourcePods)
	nsLabels := map[string]map[string]string{}
	for _, ns := range namespaces.Items {
		nsLabels[ns.Name] = ns.Labels
	}
	pgLabels := map[string]map[string]string{}
	for _, g := range groups.Items {
		pgLabels[g.Namespace+"/"+g.Name] = g.Labels
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var pg map[string]string
		if name := p.Labels[schedv1alpha1.PodGroupLabel]; name != "" {
			pg = pgLabels[p.Namespace+"/"+name]
		}
		q := workload.QueueName(pg, p.Labels, nsLabels[p.Namespace], r.DefaultQueue())
		into := in.Pending
		if p.Spec.NodeName != "" {
			into = in.Allocated
		}
		if into[q] == nil {
			into[q] = quota.Resources{}
		}
		into[q].Add(quota.PodRequests(p))
		if cards := models[p.Spec.NodeName].PodCards(p); len(cards) > 0 {
			if in.Cards[q] == nil {
				in.Cards[q] = map[string]int64{}
			}
			for model, n := range cards {
				in.Cards[q][model] += n
			}
		}
	}
	statuses := Compute(in, metav1.Now())
	for i := range queues.Items {
		q := &queues.Items[i]
		st := statuses[q.Name]
		if equalStatus(q.Status, st) {
			continue
		}
		updated := q.DeepCopy()
		updated.Status = st
		if err := r.Status().Update(ctx, updated); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// equalStatus compares ignoring condition transition times.
func equalStatus(a, b v1alpha1.QueueStatus) bool {
	strip := func(s v1alpha1.QueueStatus) v1alpha1.QueueStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	x, y := strip(a), strip(b)
	return reflect.DeepEqual(x.Conditions, y.Conditions) && x.AllocatedSummary == y.AllocatedSummary &&
		reflect.DeepEqual(x.Cards, y.Cards) && x.CardSummary == y.CardSummary &&
		quota.FromList(x.Allocated).String() == quota.FromList(y.Allocated).String() &&
		quota.FromList(x.Deserved).String() == quota.FromList(y.Deserved).String()
}
