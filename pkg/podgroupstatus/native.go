package podgroupstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
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

// NativeReconciler writes Cardinal's annotations on Kubernetes' own
// PodGroups (scheduling.k8s.io) whose pods Cardinal schedules (SPEC §1.2):
// cardinal.dev/scheduled, cardinal.dev/waiting-reason and
// cardinal.dev/waiting-refusal, as on scheduler-plugins PodGroups. Their
// status (conditions) is Kubernetes' to define and is left alone. Their
// pods are read from the scheduling state: they carry no label a cache
// could select them by.
type NativeReconciler struct {
	client.Client
	// State is the scheduling state of this process.
	State *state.State
	// Notes are the state's notes of native gangs whose holds changed, as
	// the Reconciler relays them (NativeNotes).
	Notes <-chan event.TypedGenericEvent[*schedulingv1beta1.PodGroup]
}

// SetupWithManager registers the controller: it reconciles a PodGroup when
// it changes, when one of its pods does (after podsSettle), and when the
// scheduler's hold on it changes.
func (r *NativeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	pods := r.State.KubeInformers().Core().V1().Pods().Informer()
	return ctrl.NewControllerManagedBy(mgr).
		Named("native-podgroup-status").
		For(&schedulingv1beta1.PodGroup{}).
		WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			changed := func(obj any) {
				if p, ok := obj.(*corev1.Pod); ok {
					if name := gang.NativeName(p); name != "" {
						q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: name}}, podsSettle)
					}
				}
			}
			reg, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    changed,
				UpdateFunc: func(_, obj any) { changed(obj) },
				DeleteFunc: func(obj any) {
					if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
						obj = d.Obj
					}
					changed(obj)
				},
			})
			if err == nil {
				// The scheduler's informer outlives this controller.
				go func() {
					<-ctx.Done()
					_ = pods.RemoveEventHandler(reg)
				}()
			}
			return err
		})).
		WatchesRawSource(source.Channel(r.Notes, &handler.TypedEnqueueRequestForObject[*schedulingv1beta1.PodGroup]{})).
		Complete(r)
}

// Reconcile writes one PodGroup's annotations from the state's view of its
// gang.
func (r *NativeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pg := &schedulingv1beta1.PodGroup{}
	if err := r.Get(ctx, req.NamespacedName, pg); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	k := gang.NativeKey(pg.Namespace, pg.Name)
	v, ok := r.State.GangStatus(k)
	if !ok || v.Group == nil {
		return reconcile.Result{}, nil // the state has not seen it yet; its arrival notes it
	}
	var why refusal.Refusal
	if why = v.HeldBy(); why == nil {
		why = v.BackingOff(r.State.Now())
	}
	held := ""
	if why != nil {
		held = why.String()
	} else {
		why = v.Waits
	}
	s := Compute(&schedv1alpha1.PodGroup{Spec: v.Group.Spec}, r.State.GangPods(k), held)
	want := map[string]string{ScheduledAnnotation: strconv.Itoa(int(s.Scheduled))}
	if s.WaitingReason != "" {
		want[WaitingReasonAnnotation] = s.WaitingReason
		if why != nil {
			if enc, err := refusal.Encode(why); err == nil {
				want[WaitingRefusalAnnotation] = enc
			}
		}
	}
	patch := map[string]any{}
	for _, key := range []string{ScheduledAnnotation, WaitingReasonAnnotation, WaitingRefusalAnnotation} {
		have, had := pg.Annotations[key]
		if v, ok := want[key]; ok && (!had || have != v) {
			patch[key] = v
		} else if !ok && had {
			patch[key] = nil // removed
		}
	}
	if len(patch) == 0 {
		return reconcile.Result{}, nil
	}
	body, err := jsonPatch(patch)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Patch(ctx, pg, client.RawPatch(types.MergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("writing Cardinal's annotations on PodGroup %s: %w", req.NamespacedName, err)
	}
	return reconcile.Result{}, nil
}

// jsonPatch is a merge patch of a PodGroup's annotations (a nil value
// removes one).
func jsonPatch(annotations map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
}
