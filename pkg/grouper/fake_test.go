package grouper

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/pkg/workload"
)

// fakeReader holds a namespace's workloads; unreadable kinds return an
// *Unreadable.
type fakeReader struct {
	objs       map[string]*unstructured.Unstructured
	unreadable map[schema.GroupKind]bool
}

func newFake(objs ...*unstructured.Unstructured) *fakeReader {
	r := &fakeReader{objs: map[string]*unstructured.Unstructured{}, unreadable: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		r.objs[key(o.GroupVersionKind().GroupKind(), o.GetName())] = o
	}
	return r
}

func key(gk schema.GroupKind, name string) string { return gk.String() + "/" + name }

func (r *fakeReader) Knows(gk schema.GroupKind) bool {
	return gk == workload.PodKind || gk == workload.CronJob || gk == workload.ReplicaSet || gk == workload.Job ||
		gk == workload.StatefulSet || gk == workload.Deployment || workload.NewKinds(workload.GroupableKinds...)[gk]
}

func (r *fakeReader) Get(gk schema.GroupKind, _, name string) (*unstructured.Unstructured, error) {
	if r.unreadable[gk] {
		return nil, &Unreadable{Kind: gk, Resource: "things", Why: "it may not list it"}
	}
	if o := r.objs[key(gk, name)]; o != nil {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name)
}

// jobsOf lists the fake's Jobs that owner controls.
func (r *fakeReader) jobsOf(owner *unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == "Job" {
			if c := metav1.GetControllerOfNoCopy(o); c != nil && c.UID == owner.GetUID() {
				out = append(out, o)
			}
		}
	}
	return out
}

// wl is a workload object: apiVersion, kind and name, its spec, owned by
// owner (nil for a top-level one).
type wl struct{ u *unstructured.Unstructured }

func mk(apiVersion, kind, name string, spec map[string]any) wl {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace("ns")
	u.SetUID(types.UID(kind + "-" + name))
	return wl{u}
}

func (w wl) ownedBy(o wl) wl {
	t := true
	w.u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: o.u.GetAPIVersion(), Kind: o.u.GetKind(), Name: o.u.GetName(), UID: o.u.GetUID(), Controller: &t}})
	return w
}

func (w wl) annotated(k, v string) wl {
	a := w.u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	w.u.SetAnnotations(a)
	return w
}

func (w wl) labelled(k, v string) wl {
	l := w.u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	w.u.SetLabels(l)
	return w
}

// templateLabelled labels w's pod template (spec.template).
func (w wl) templateLabelled(k, v string) wl {
	tmpl, _, _ := unstructured.NestedMap(w.u.Object, "spec", "template")
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	if labels == nil {
		labels = map[string]string{}
	}
	labels[k] = v
	_ = unstructured.SetNestedStringMap(tmpl, labels, "metadata", "labels")
	_ = unstructured.SetNestedMap(w.u.Object, tmpl, "spec", "template")
	return w
}

func (w wl) status(s map[string]any) wl {
	w.u.Object["status"] = s
	return w
}

// podOf is a pod controlled by w.
func podOf(w wl, name string) *corev1.Pod {
	t := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("pod-" + name),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: w.u.GetAPIVersion(), Kind: w.u.GetKind(), Name: w.u.GetName(), UID: w.u.GetUID(), Controller: &t}}}}
}

// tmpl is a pod template asking for cpu cores and gpus.
func tmpl(cpu, gpus int) map[string]any {
	req := map[string]any{"cpu": fmt.Sprint(cpu)}
	if gpus > 0 {
		req["nvidia.com/gpu"] = fmt.Sprint(gpus)
	}
	return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "resources": map[string]any{"requests": req, "limits": limitsOf(req)}}}}}
}

func limitsOf(req map[string]any) map[string]any {
	out := map[string]any{}
	if g, ok := req["nvidia.com/gpu"]; ok {
		out["nvidia.com/gpu"] = g
	}
	return out
}
