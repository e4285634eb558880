package eventhandler

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// readable remembers, per custom resource, whether the scheduler could
// list it when its plugins registered their events.
var readable sync.Map // fwk.EventResource -> bool

// Readable leaves out of events those on Cardinal's custom resources that
// the scheduler cannot list: their CRD missing, or the RBAC to read them.
// kube-scheduler starts an informer for every resource a plugin requeues
// on and schedules nothing, in any profile, until all have listed; one
// that never can would stop the whole scheduler (SPEC §6). Cardinal's
// state wakes the pods waiting for such a resource when it comes (pkg/state,
// apis.go), so leaving the event out loses nothing but a requeue hint.
func Readable(ctx context.Context, h fwk.Handle, events []fwk.ClusterEventWithHint) []fwk.ClusterEventWithHint {
	out := events[:0:0]
	for _, e := range events {
		if r := e.Event.Resource; (r != QueueResource && r != PodGroupResource) || canList(ctx, h, r) {
			out = append(out, e)
		}
	}
	return out
}

func canList(ctx context.Context, h fwk.Handle, r fwk.EventResource) bool {
	if ok, known := readable.Load(r); known {
		return ok.(bool)
	}
	if h == nil || h.KubeConfig() == nil {
		return true // a plugin built without a cluster (unit tests)
	}
	gvr, _ := schema.ParseResourceArg(string(r))
	ok := true
	if dc, err := dynamic.NewForConfig(h.KubeConfig()); err == nil {
		_, err = dc.Resource(*gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			ok = false
			klog.FromContext(ctx).Error(err, "Cardinal cannot list a resource its plugins requeue pods on; kube-scheduler is not asked to watch it, so that it schedules the pods that do not need it. Once it can be listed, Cardinal wakes the pods that waited for it, but restart the scheduler for it to requeue pods on that resource's changes again", "resource", r)
		}
	}
	actual, _ := readable.LoadOrStore(r, ok)
	return actual.(bool)
}
