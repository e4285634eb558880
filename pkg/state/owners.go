package state

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// A pod's preemptibility may come from its top-level owner's label (SPEC
// §5.1). Owners arrive on informers of their own, in any order relative to
// pods (after a restart, a pod may be seen before its ReplicaSet), and
// their labels can change. So when an owner with a preemptibility label
// appears, changes it or goes, the pods under it are classified anew:
// what they are charged depends on the API alone, not on arrival order.

// ownerHandler re-derives the facts of the pods under an owner whose
// preemptibility label was set, changed or removed.
func (s *State) ownerHandler() cache.ResourceEventHandler {
	label := func(obj any) (metav1.Object, string, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(metav1.Object)
		if !ok {
			return nil, "", false
		}
		v, has := o.GetLabels()[v1alpha1.PreemptibilityLabel]
		return o, v, has
	}
	changed := func(obj any) {
		if o, _, has := label(obj); has {
			s.ownerChanged(o)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o, _, has := label(obj)
			switch {
			case o == nil:
				return
			case has:
				s.ownerChanged(o)
			case metav1.GetControllerOfNoCopy(o) != nil:
				// A ReplicaSet or Job seen after its pods: they may now
				// reach a top-level owner with the label.
				s.controllerSeen(o.GetNamespace(), o.GetUID())
			}
			s.ownerSeen(obj, o)
		},
		DeleteFunc: changed,
		UpdateFunc: func(oldObj, newObj any) {
			old, before, had := label(oldObj)
			o, after, has := label(newObj)
			if o == nil {
				return
			}
			if old != nil && old.GetUID() != o.GetUID() {
				// Deleted and made again under its name while a watch was
				// down: delivered as an update. Its pods are new to it.
				s.controllerSeen(o.GetNamespace(), o.GetUID())
				s.ownerSeen(newObj, o)
			}
			if had != has || before != after {
				s.ownerChanged(o)
			}
		},
	}
}

// ownerChanged classifies anew the pods an owner controls, directly or
// through the ReplicaSets of a Deployment or the Jobs of a CronJob.
func (s *State) ownerChanged(owner metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	controllers := []types.UID{owner.GetUID()}
	ns, everything := owner.GetNamespace(), labels.Everything()
	if l := s.wiring.kube.owners.ReplicaSets; l != nil {
		if rss, err := l.ReplicaSets(ns).List(everything); err == nil {
			for _, rs := range rss {
				if c := metav1.GetControllerOfNoCopy(rs); c != nil && c.UID == owner.GetUID() {
					controllers = append(controllers, rs.UID)
				}
			}
		}
	}
	if l := s.wiring.kube.owners.Jobs; l != nil {
		if jobs, err := l.Jobs(ns).List(everything); err == nil {
			for _, j := range jobs {
				if c := metav1.GetControllerOfNoCopy(j); c != nil && c.UID == owner.GetUID() {
					controllers = append(controllers, j.UID)
				}
			}
		}
	}
	for _, uid := range controllers {
		for _, e := range s.books.podsByController[controllerKey(ns, uid)] {
			e.owner = s.wiring.kube.owners.Labels(e.pod)
			s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
		}
	}
}

// controllerSeen classifies anew the pods a controller that is itself
// controlled (a ReplicaSet, a Job) controls, when it is first seen: a pod
// seen before it could not reach its top-level owner. It costs a map
// lookup when the controller has no pods yet, as when it is just created.
func (s *State) controllerSeen(ns string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.books.podsByController[controllerKey(ns, uid)] {
		e.owner = s.wiring.kube.owners.Labels(e.pod)
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

// ownerUnseenLocked names a pending pod's owner whose event has not
// arrived yet ("" if none): one created moments ago, as a Deployment's
// ReplicaSet and its pods are. Its label may make the pod non-preemptible,
// and a pod placed preemptible stays so (SPEC §3.7): the pod waits
// (AwaitOwner), woken when the owner is seen (ownerSeen). A placed pod is
// booked as placed and needs no owner.
func (s *State) ownerUnseenLocked(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" || metav1.GetControllerOfNoCopy(pod) == nil {
		return ""
	}
	_, unseen := s.wiring.kube.owners.Walk(pod)
	return unseen
}

// AwaitOwner tells which owner of a pending pod is still unseen, reading
// its owners again (its facts may have been derived before an owner
// arrived, with no pod waiting for it then). If one is, the pod waits for
// it, woken when it is seen (ownerSeen); if none is, its facts are derived
// anew. Both under the state's lock, so an owner seen meanwhile is not
// missed.
func (s *State) AwaitOwner(pod *corev1.Pod) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, recorded := s.ensurePodLocked(pod)
	unseen := s.ownerUnseenLocked(pod)
	if !recorded || e.placed() {
		return unseen // deleted meanwhile, or placed: nothing to wait for
	}
	if unseen != e.OwnerUnseen {
		e.owner = s.wiring.kube.owners.Labels(e.pod)
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
	s.waitForOwnerLocked(e, unseen)
	return unseen
}

// waitForOwnerLocked files a pod as waiting for owner ("": for none), out
// of where it waited before.
func (s *State) waitForOwnerLocked(e *podEntry, owner string) {
	s.waits.owner.remove(e.waitsFor, e.pod.UID)
	e.waitsFor = owner
	if owner != "" {
		s.waits.owner.add(owner, e.pod.UID, e.pod)
	}
}

// ownerSeen classifies anew and wakes the pods that waited for an owner,
// now seen. It costs a map lookup when none did, as for almost every
// owner.
func (s *State) ownerSeen(obj any, o metav1.Object) {
	kind := ""
	switch obj.(type) {
	case *appsv1.ReplicaSet:
		kind = "ReplicaSet"
	case *appsv1.Deployment:
		kind = "Deployment"
	case *appsv1.StatefulSet:
		kind = "StatefulSet"
	case *appsv1.DaemonSet:
		kind = "DaemonSet"
	case *batchv1.Job:
		kind = "Job"
	case *batchv1.CronJob:
		kind = "CronJob"
	}
	key := kind + " " + o.GetNamespace() + "/" + o.GetName()
	s.mu.RLock()
	none := len(s.waits.owner[key]) == 0
	s.mu.RUnlock()
	if none {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var woken []*corev1.Pod
	for uid := range s.waits.owner.take(key) {
		e := s.books.pods[uid]
		if e == nil {
			continue
		}
		e.waitsFor = ""
		if !e.placed() {
			e.owner = s.wiring.kube.owners.Labels(e.pod)
			s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
			woken = append(woken, e.pod)
		}
	}
	s.activateLocked(slices.Values(woken))
}

// controllerKey is what pods of namespace ns whose controller has uid are
// indexed under (books.podsByController).
func controllerKey(ns string, uid types.UID) string { return ns + "/" + string(uid) }

// controllerUID is the UID of a pod's controller, "" if it has none.
func controllerUID(e *podEntry) types.UID {
	if c := metav1.GetControllerOfNoCopy(e.pod); c != nil {
		return c.UID
	}
	return ""
}
