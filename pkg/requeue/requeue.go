// Package requeue reads the cluster events that Cardinal's queueing hints
// judge. kube-scheduler hands custom resources (PodGroups, Queues) to hints
// as *unstructured.Unstructured, from its dynamic informers, so nothing
// here asserts a typed object: names, generations, labels and annotations
// are read through meta.Accessor, which both forms satisfy.
//
// A hint that requeues on every write would requeue every rejected pod on
// every status write Cardinal makes itself; these say what changed.
package requeue

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
)

// Change is what a hint needs to know of an object's add or update.
type Change struct {
	// Namespace and Name of the object (Namespace is "" for Queues).
	Namespace, Name string
	// Added is true for an add (no old object).
	Added bool
	// Spec is true when the spec changed (generation), Labels when the
	// labels did; annotations that carry meaning are compared by the caller
	// through Annotation.
	Spec, Labels bool
	old, new     metav1.Object
}

// Of reads an add (oldObj nil) or an update of a typed or unstructured object.
func Of(oldObj, newObj any) (Change, error) {
	n, err := meta.Accessor(newObj)
	if err != nil {
		return Change{}, fmt.Errorf("reading the changed object: %w", err)
	}
	c := Change{Namespace: n.GetNamespace(), Name: n.GetName(), new: n, Added: oldObj == nil}
	if c.Added {
		c.Spec, c.Labels = true, true
		return c, nil
	}
	o, err := meta.Accessor(oldObj)
	if err != nil {
		return Change{}, fmt.Errorf("reading the object before the change: %w", err)
	}
	c.old = o
	c.Spec = o.GetGeneration() != n.GetGeneration()
	c.Labels = !maps.Equal(o.GetLabels(), n.GetLabels())
	return c, nil
}

// Annotation tells whether any of the annotations keys was added, removed
// or changed (always true for an add that sets one).
func (c Change) Annotation(keys ...string) bool {
	for _, k := range keys {
		var before string
		var had bool
		if c.old != nil {
			before, had = c.old.GetAnnotations()[k]
		}
		after, has := c.new.GetAnnotations()[k]
		if had != has || before != after {
			return true
		}
	}
	return false
}

// Gang is the gang a PodGroup change is about.
func (c Change) Gang() gang.Key { return gang.Key(c.Namespace + "/" + c.Name) }

// QueueQuota tells whether a Queue change can change what its pods may
// use: it was created, its spec changed (guarantee, capability, cards,
// weight), or its volcano.sh/card.quota annotation did. Status writes do
// none of these.
func (c Change) QueueQuota() bool {
	return c.Added || c.Spec || c.Annotation(v1alpha1.VolcanoCardQuotaAnnotation)
}

// PodGroupAdmission tells whether a PodGroup change can change whether its
// gang is admitted: it was created, its spec changed (minMember,
// minResources), its labels did (queue, preemptibility), or its card
// request did. Cardinal's own status and annotation writes do none of these.
func (c Change) PodGroupAdmission() bool {
	return c.Added || c.Spec || c.Labels || c.Annotation(v1alpha1.CardRequestAnnotation, v1alpha1.VolcanoCardRequestAnnotation)
}

// OwnPodGroupChanged returns a queueing hint that requeues a pod when its
// own PodGroup (its gang as gangOf says) is created or changes in what
// admits its gang (PodGroupAdmission). Cardinal's own status and
// annotation writes, and other gangs' PodGroups, are skipped.
func OwnPodGroupChanged(gangOf func(*corev1.Pod) (gang.Key, bool)) fwk.QueueingHintFn {
	return func(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
		// kube-scheduler asks this of every waiting pod on every PodGroup
		// write: another gang's PodGroup is told apart by string
		// comparisons, before anything else is read.
		n, err := meta.Accessor(newObj)
		if err != nil {
			return fwk.Queue, fmt.Errorf("reading the changed object: %w", err)
		}
		k, ok := gangOf(pod)
		if ns, name := k.Split(); !ok || k.Native() || name != n.GetName() || ns != n.GetNamespace() {
			if v := logger.V(5); v.Enabled() {
				v.Info("PodGroup of another gang changed: skip", "pod", klog.KObj(pod), "podGroup", n.GetNamespace()+"/"+n.GetName())
			}
			return fwk.QueueSkip, nil
		}
		c, err := Of(oldObj, newObj)
		if err != nil {
			return fwk.Queue, err
		}
		if !c.PodGroupAdmission() {
			logger.V(5).Info("PodGroup status or annotations changed: skip", "pod", klog.KObj(pod), "podGroup", c.Gang())
			return fwk.QueueSkip, nil
		}
		return fwk.Queue, nil
	}
}

// OwnQueueChanged returns a queueing hint that requeues a pod when its own
// Queue (as queueOf resolves it) is created or its quota changes
// (QueueQuota). Cardinal's own status writes, and other queues, are skipped.
func OwnQueueChanged(queueOf func(*corev1.Pod) string) fwk.QueueingHintFn {
	return func(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
		c, err := Of(oldObj, newObj)
		if err != nil {
			return fwk.Queue, err
		}
		if q := queueOf(pod); c.Name != q {
			logger.V(5).Info("Another queue changed: skip", "pod", klog.KObj(pod), "queue", c.Name)
			return fwk.QueueSkip, nil
		}
		if !c.QueueQuota() {
			logger.V(5).Info("Queue status changed: skip", "pod", klog.KObj(pod), "queue", c.Name)
			return fwk.QueueSkip, nil
		}
		return fwk.Queue, nil
	}
}
