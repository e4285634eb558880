// Package podgroupstatus keeps the status of scheduler-plugins PodGroups that
// Cardinal schedules: phase, running/succeeded/failed counts and the start of
// scheduling in status, and, because that status has no field for them, the
// number of scheduled pods and why the gang waits in annotations
// (cardinal.dev/scheduled, cardinal.dev/waiting-reason, and the refusal
// that reason was built from, as JSON, in cardinal.dev/waiting-refusal).
// pkg/controllers runs it.
package podgroupstatus

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
)

// Annotations Cardinal writes on PodGroups.
const (
	ScheduledAnnotation     = "cardinal.dev/scheduled"
	WaitingReasonAnnotation = "cardinal.dev/waiting-reason"
	// WaitingRefusalAnnotation is the scheduler's own refusal of the
	// waiting gang (held, backing off, waiting for another gang), as JSON
	// (refusal.Encode): kubectl cardinal reads what only the running
	// scheduler knows from it, without parsing the waiting reason back.
	WaitingRefusalAnnotation = "cardinal.dev/waiting-refusal"

	podGroupIndex = "cardinal.dev/pod-group"
)

// podsSettle is how long a PodGroup waits after a change of one of its
// pods before its status is computed. A gang's pods are created, bound,
// refused and deleted together: one write then carries the whole step,
// not one for each pod. A change of the PodGroup's spec, labels or other
// annotations, or of the scheduler's hold on it, is written at once.
const podsSettle = time.Second

// Reconciler writes a PodGroup's status from its pods, and why it waits
// from its pods and the scheduler's admission holds.
type Reconciler struct {
	client.Client
	// SchedulerName limits the pods counted to those of this scheduler.
	SchedulerName string
	// State, when set, is the scheduling state of this process: a gang it
	// holds back from admission, or that backs off, says so, and a change
	// of either reconciles the gang (its pods, not tried meanwhile, do not
	// change).
	State *state.State
	// NativeNotes, when set, receives the state's notes of gangs of
	// Kubernetes' own PodGroups, for the NativeReconciler.
	NativeNotes chan<- event.TypedGenericEvent[*schedulingv1beta1.PodGroup]
}

// SetupWithManager registers the controller: it reconciles a PodGroup when
// it or one of its pods changes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podGroupIndex, func(o client.Object) []string {
		if name := o.GetLabels()[schedv1alpha1.PodGroupLabel]; name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.State != nil {
		notes := make(chan event.TypedGenericEvent[*schedv1alpha1.PodGroup])
		go r.relayNotes(ctx, notes)
		b = b.WatchesRawSource(source.Channel(notes, &handler.TypedEnqueueRequestForObject[*schedv1alpha1.PodGroup]{}))
	}
	return b.
		Named("podgroup-status").
		Watches(&schedv1alpha1.PodGroup{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.Add(requestFor(e.Object))
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				podGroupChanged(e.ObjectOld, e.ObjectNew, q)
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.Add(requestFor(e.Object))
			},
		}).
		Watches(&corev1.Pod{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				podChanged(e.Object, q)
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				podChanged(e.ObjectOld, q)
				podChanged(e.ObjectNew, q)
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				podChanged(e.Object, q)
			},
		}).
		Complete(r)
}

// podGroupChanged asks for a PodGroup whose own fields changed at once.
// An update that changed only what this controller writes (its status and
// the annotations it writes, or nothing: a resync) is most often the echo of its
// own write: asking at once would cut a gang's podsSettle short, and read
// a cached PodGroup that may not have the write's other half yet. It is
// asked for once the gang's pods settle instead, which still puts back
// what another writer changed.
func podGroupChanged(old, cur client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if ownWrite(old, cur) {
		q.AddAfter(requestFor(cur), podsSettle)
		return
	}
	q.Add(requestFor(cur))
}

// ownWrite tells whether an update of a PodGroup changed at most its
// status and the annotations this controller writes.
func ownWrite(old, cur client.Object) bool {
	others := func(o client.Object) map[string]string {
		a := maps.Clone(o.GetAnnotations())
		delete(a, ScheduledAnnotation)
		delete(a, WaitingReasonAnnotation)
		delete(a, WaitingRefusalAnnotation)
		return a
	}
	return old.GetUID() == cur.GetUID() && old.GetGeneration() == cur.GetGeneration() &&
		(old.GetDeletionTimestamp() == nil) == (cur.GetDeletionTimestamp() == nil) &&
		maps.Equal(old.GetLabels(), cur.GetLabels()) &&
		maps.Equal(others(old), others(cur))
}

func requestFor(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
}

// podChanged asks for the status of the pod's PodGroup, if it has one,
// once its pods have settled (podsSettle). A request already waiting keeps
// its time, so a gang that keeps changing is still written each podsSettle.
func podChanged(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	name := o.GetLabels()[schedv1alpha1.PodGroupLabel]
	if name == "" {
		return
	}
	q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}, podsSettle)
}

// relayNotes turns the state's notes of gangs whose holds changed into
// reconcile requests.
func (r *Reconciler) relayNotes(ctx context.Context, out chan<- event.TypedGenericEvent[*schedv1alpha1.PodGroup]) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.State.GangNotes():
		}
		for _, k := range r.State.TakeGangNotes() {
			ns, name := k.Split()
			meta := metav1.ObjectMeta{Namespace: ns, Name: name}
			if k.Native() {
				if r.NativeNotes == nil {
					continue
				}
				select {
				case r.NativeNotes <- event.TypedGenericEvent[*schedulingv1beta1.PodGroup]{Object: &schedulingv1beta1.PodGroup{ObjectMeta: meta}}:
				case <-ctx.Done():
					return
				}
				continue
			}
			select {
			case out <- event.TypedGenericEvent[*schedv1alpha1.PodGroup]{Object: &schedv1alpha1.PodGroup{ObjectMeta: meta}}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Reconcile computes one PodGroup's status from its pods and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pg := &schedv1alpha1.PodGroup{}
	if err := r.Get(ctx, req.NamespacedName, pg); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(req.Namespace), client.MatchingFields{podGroupIndex: req.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	var mine []*corev1.Pod
	seen := map[types.UID]bool{}
	for i := range pods.Items {
		if pods.Items[i].Spec.SchedulerName == r.SchedulerName {
			mine = append(mine, &pods.Items[i])
			seen[pods.Items[i].UID] = true
		}
	}
	if r.State != nil {
		// Pods the grouper put in a gang carry no label until they bind
		// (and API servers before 1.35 take none from a Binding): the
		// state knows them.
		for _, p := range r.State.GangPods(gang.KeyOf(pg)) {
			if !seen[p.UID] {
				mine = append(mine, p)
			}
		}
	}
	// The gang's reason is its hold or backoff when it has one; else its
	// first waiting pod's. Either way the refusal the scheduler itself
	// gave the gang, if any, goes beside it.
	var why, waits refusal.Refusal
	if r.State != nil {
		if g, ok := r.State.GangStatus(gang.KeyOf(pg)); ok {
			if why = g.HeldBy(); why == nil {
				why = g.BackingOff(r.State.Now())
			}
			waits = g.Waits
		}
	}
	held := ""
	if why != nil {
		held = why.String()
	} else {
		why = waits
	}
	s := Compute(pg, mine, held)

	want := pg.DeepCopy()
	want.Status.Phase, want.Status.Running, want.Status.Succeeded, want.Status.Failed = s.Phase, s.Running, s.Succeeded, s.Failed
	if s.Scheduled > 0 && want.Status.ScheduleStartTime.IsZero() {
		want.Status.ScheduleStartTime = metav1.Now()
	}
	if want.Status != pg.Status {
		if err := r.Status().Patch(ctx, want, client.MergeFrom(pg)); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	before := want.DeepCopy()
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[ScheduledAnnotation] = strconv.Itoa(int(s.Scheduled))
	if s.WaitingReason != "" {
		want.Annotations[WaitingReasonAnnotation] = s.WaitingReason
	} else {
		delete(want.Annotations, WaitingReasonAnnotation)
	}
	delete(want.Annotations, WaitingRefusalAnnotation)
	if s.WaitingReason != "" && why != nil {
		if enc, err := refusal.Encode(why); err == nil {
			want.Annotations[WaitingRefusalAnnotation] = enc
		}
	}
	if fmt.Sprint(want.Annotations) != fmt.Sprint(before.Annotations) {
		if err := r.Patch(ctx, want, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}
