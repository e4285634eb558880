package state

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/workload"
)

// The books are kept as they were decided (SPEC §3.7): a placed pod stays
// in the queue it was placed in, and non-preemptible only if it was placed
// so. The binding writes how it was placed on the pod, as the annotation
// cardinal.dev/placed-as, in the same API call that binds it, so a state
// rebuilt after a restart books it the same way.

// PlacedAs is the cardinal.dev/placed-as value for a pod the state has
// placed, written when the pod is bound; false for a pod it has not placed.
func (s *State) PlacedAs(pod *corev1.Pod) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.books.pods[pod.UID]
	if e == nil || e.placedAs == nil {
		return "", false
	}
	return formatPlacement(*e.placedAs), true
}

// nonPreemptible tells whether the pod is charged as non-preemptible work:
// non-preemptible pods, and the min members of semi-preemptible gangs
// (SPEC §5.2), which may use only their queue's guarantee (SPEC §3.5). A
// placed pod is charged so only if it was placed so: a later relabel or
// role change cannot make running work non-preemptible (SPEC §3.7).
func (e *podEntry) nonPreemptible() bool {
	return e.wouldBeNonPreemptible() && (e.placedAs == nil || e.placedAs.nonPreemptible)
}

// bookedPreemptibility is the pod's preemptibility as preemption must see
// it: a pod placed as preemptible work stays preemptible whatever it is
// relabelled (SPEC §3.7).
func (e *podEntry) bookedPreemptibility() workload.Preemptibility {
	if e.placedAs != nil && !e.placedAs.nonPreemptible {
		return workload.Preemptible
	}
	return e.Preemptibility
}

// wouldBeNonPreemptible is nonPreemptible by the pod's labels and role now.
func (e *podEntry) wouldBeNonPreemptible() bool {
	return e.Preemptibility == workload.NonPreemptible || (e.Preemptibility == workload.SemiPreemptible && !e.elastic)
}

func formatPlacement(p placement) string {
	class := v1alpha1.Preemptible
	if p.nonPreemptible {
		class = v1alpha1.NonPreemptible
	}
	return p.queue + "/" + class
}

func parsePlacement(v string) (placement, bool) {
	queue, class, ok := strings.Cut(v, "/")
	if !ok || queue == "" || (class != v1alpha1.Preemptible && class != v1alpha1.NonPreemptible) {
		return placement{}, false
	}
	return placement{queue: queue, nonPreemptible: class == v1alpha1.NonPreemptible}, true
}

// readPlacementLocked books a pod first seen bound (after a restart) as the
// binding recorded it. The annotation is only trusted to keep books as they
// were: it names a queue only if the pod's namespace may use that queue,
// and it can make a pod preemptible but never non-preemptible beyond what
// its labels say (nonPreemptible needs both). A pod bound without it (by
// another binder, or with spec.nodeName set at creation) is booked by its
// labels as they are, and follows them.
//
// Before the state has synced, the pod's namespace or its Queue may not
// have arrived yet (informers deliver in no order): the pod is booked as
// the annotation says and judged once they have (verifyPlacementsLocked).
//
// Its caller brackets it with chargeLocked: it may move the pod's queue.
func (s *State) readPlacementLocked(e *podEntry) {
	p, ok := parsePlacement(e.pod.Annotations[v1alpha1.PlacedAsAnnotation])
	if !ok {
		return
	}
	if !s.wiring.synced.Load() {
		s.books.unverified[e.pod.UID] = e
	} else if s.deniedLocked(p.queue, e.pod.Namespace) != nil {
		return
	}
	if p.queue != e.Queue {
		s.forgetWaitLocked(e)
		if g := s.books.gangs[e.Gang]; g != nil {
			g.countQueue(e.Queue, -1)
			g.countQueue(p.queue, 1)
		}
	}
	e.Queue, e.Denied = p.queue, nil
	e.placedAs = &p
}

// verifyPlacementsLocked judges, as the state becomes synced, the pods
// booked from their annotation before: one whose namespace may not use the
// queue it names is booked by its labels instead, as if it had none.
func (s *State) verifyPlacementsLocked() {
	for uid, e := range s.books.unverified {
		delete(s.books.unverified, uid)
		if s.books.pods[uid] != e || e.placedAs == nil || e.terminating || s.deniedLocked(e.placedAs.queue, e.pod.Namespace) == nil {
			continue // a terminating pod stays booked as it was until it is gone
		}
		// Uncharged as it was charged, with its placement; then charged
		// by its labels.
		s.chargeLocked(e, -1)
		e.placedAs = nil
		s.chargeLocked(e, 1)
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

// warnKeptPreemptibleLocked tells, with a warning event on the pod, that a
// placed pod whose labels or role now make it non-preemptible is still
// charged as preemptible work, and may be reclaimed (SPEC §3.7).
func (s *State) warnKeptPreemptibleLocked(e *podEntry) {
	msg := ""
	if e.placedAs != nil && !e.placedAs.nonPreemptible && e.wouldBeNonPreemptible() {
		msg = fmt.Sprintf("pod %s/%s was placed as preemptible work in queue %s and stays preemptible (reclaimable) until it is gone: it was relabelled %s or became a min member of its gang after it was placed; non-preemptible applies to pods placed from now on, within the queue's guarantee",
			e.pod.Namespace, e.pod.Name, e.Queue, e.Preemptibility)
	}
	s.reportLocked(podRef(e.pod), "PreemptibilityKept", "Scheduling", msg)
}

func podRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

// deniedLocked says why namespace may not use queue (SPEC §1.1), or nil.
// A queue no Queue defines has no selector: PreFilter says it is missing.
func (s *State) deniedLocked(queue, namespace string) refusal.Refusal {
	q := s.books.queues[queue]
	if q == nil || q.selector == nil || q.selector.Matches(labels.Set(s.books.namespaces[namespace])) {
		return nil
	}
	return refusal.NamespaceDenied{Namespace: namespace, Queue: queue, Selector: q.selectorText}
}

// setSelectorLocked records a queue's namespaceSelector. A selector that
// cannot be read matches no namespace, and the Queue gets an event.
func (s *State) setSelectorLocked(q *queueEntry, obj *v1alpha1.Queue) {
	q.selector, q.selectorText = nil, ""
	msg := ""
	if sel := obj.Spec.NamespaceSelector; sel != nil {
		parsed, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			q.selector, q.selectorText = labels.Nothing(), "(invalid)"
			msg = fmt.Sprintf("queue %s: spec.namespaceSelector is invalid and matches no namespace: %v; fix the selector", obj.Name, err)
		case !parsed.Empty():
			q.selector, q.selectorText = parsed, metav1.FormatLabelSelector(sel)
		}
	}
	s.reportLocked(queueRef(obj), "InvalidNamespaceSelector", "Admission", msg)
}

// rederivePendingFactsLocked derives anew the facts of a queue's pending pods,
// whose namespaces may or may not use it since its selector changed.
// Selectors change rarely: this walks every pod.
func (s *State) rederivePendingFactsLocked(queue string) {
	for _, e := range s.books.pods {
		if !e.placed() && e.Queue == queue {
			s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
		}
	}
}
