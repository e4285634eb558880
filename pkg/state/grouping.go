package state

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
)

// Pods of the workloads Cardinal groups (SPEC §7) are not scheduled one by
// one before their PodGroup exists. The grouper (pkg/grouper) runs beside
// the scheduler, under its leader election: it reads a pod's owners, makes
// its PodGroup and puts the pod in that gang here (Grouped), with no API
// write: its Binding writes the gang on it (GroupedInto). Or it rules that
// the pod is a gang of one (Ungrouped). Until it has done either, the pod
// is held at PreEnqueue; which pods it rules on is one function both ask
// (workload.Kinds.Groupable). A pod put in a gang is a member as any
// other (GangOf), held by its gang's own admission, and woken with it when
// the gang becomes whole; a pod ruled a gang of one is woken here, through
// the outbox, never from inside the scheduling queue's call.

// admitUngangedPod is AdmitGang for a pod that names no gang: it holds
// one the grouper may group and has not ruled on (nil, false when the pod
// need not wait). A pod of a kind not grouped takes only the read lock.
// inGang is true when the grouper has put the pod in its gang meanwhile:
// the caller admits it as a gang's pod.
func (s *State) admitUngangedPod(pod *corev1.Pod) (st *fwk.Status, inGang bool) {
	if !s.settings.GroupedKinds.Groupable(pod, s.settings.SchedulerName) {
		// Let into the queue alone: if its controller later becomes one the
		// grouper groups (an adoption), it stays alone.
		s.mu.RLock()
		if e := s.books.pods[pod.UID]; e != nil {
			e.queuedAlone.Store(true)
		}
		s.mu.RUnlock()
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.GangOf(pod); ok {
		return nil, true
	}
	return s.awaitGroupingLocked(pod), false
}

// awaitGroupingLocked holds a pending pod that the grouper may group and
// has not ruled on, filed to be woken when it does; nil when the pod need
// not wait, and then it never will: it is in the scheduling queue alone.
func (s *State) awaitGroupingLocked(pod *corev1.Pod) *fwk.Status {
	e, recorded := s.ensurePodLocked(pod)
	if !recorded {
		return nil
	}
	if e.ruling != unruled {
		return nil
	}
	if s.wiring.missing[podGroupsAPI] != "" || s.settings.ReadOnly {
		// Without PodGroups (their CRD not installed, or no right to read
		// them) no workload can be grouped: its pods are scheduled as
		// before, as every pod that needs no PodGroup is (SPEC §6). A
		// tool's copy of the state knows no ruling the scheduler made
		// beyond what grouper.Replay finds: it judges the pod alone.
		if !s.settings.ReadOnly {
			e.ruling = ruledAlone
		}
		return nil
	}
	if unseen := s.ownerUnseenLocked(pod); unseen != "" {
		// Neither the grouper nor the queue plugins can judge the pod
		// before its owner is seen: it waits for it (woken by ownerSeen),
		// and says so, as it would at PreFilter.
		s.waitForOwnerLocked(e, unseen)
		r := refusal.OwnerUnseen{Owner: unseen}
		s.reportLocked(podRef(pod), "OwnerUnseen", "Scheduling", r.String())
		return refusal.Status(fwk.UnschedulableAndUnresolvable, r)
	}
	s.waits.grouping[pod.UID] = pod
	return refusal.Status(fwk.UnschedulableAndUnresolvable, awaitingGroup(pod))
}

// releaseGroupingLocked lets go the pods held for the grouper, once
// PodGroups cannot be read: they are scheduled alone (SPEC §6).
func (s *State) releaseGroupingLocked() {
	if len(s.waits.grouping) == 0 {
		return
	}
	pods := s.waits.grouping
	s.waits.grouping = map[types.UID]*corev1.Pod{}
	s.activateLocked(maps.Values(pods))
}

// ruling is what the grouper ruled of a pod it may group.
type ruling uint8

const (
	// unruled: not yet; the pod waits.
	unruled ruling = iota
	// ruledAlone: a gang of one; the pod is scheduled as such.
	ruledAlone
	// ruledGrouped: a member of its workload's gang (GangOf), its gang's
	// to admit.
	ruledGrouped
)

func awaitingGroup(pod *corev1.Pod) refusal.AwaitingGroup {
	r := refusal.AwaitingGroup{Pod: pod.Namespace + "/" + pod.Name}
	if c := metav1.GetControllerOfNoCopy(pod); c != nil {
		r.Owner = c.Kind + " " + c.Name
	}
	return r
}

// AwaitsGrouping tells whether the grouper has yet to rule on pod: a pod
// it may group, pending, neither put in a gang nor ruled a gang of one.
// Only such a pod may be put in a gang: one already let into the
// scheduling queue is never moved into one.
func (s *State) AwaitsGrouping(pod *corev1.Pod) bool {
	if !s.settings.GroupedKinds.Groupable(pod, s.settings.SchedulerName) {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.wiring.missing[podGroupsAPI] != "" {
		return false
	}
	e := s.books.pods[pod.UID]
	return e == nil || e.awaitsGrouping()
}

// awaitsGrouping: the grouper may still rule on the pod. A pod placed, or
// let into the scheduling queue alone, is never moved into a gang: its
// place in the queue's order, and the cycle it may be in, are a pod's.
func (e *podEntry) awaitsGrouping() bool {
	return e.ruling == unruled && !e.placed() && !e.queuedAlone.Load()
}

// AwaitingGroupingUnder are the pods of pod's controller that the grouper
// has yet to rule on: it rules on a workload's pods together, so that a
// gang becomes whole at once rather than pod by pod.
//
// Only pods of the same namespace whose controller reference is the same
// (group, kind, name and UID) are its siblings: controller UIDs are not
// secret, and a pod in another namespace that names one must not be swept
// into another team's gang.
func (s *State) AwaitingGroupingUnder(pod *corev1.Pod) []*corev1.Pod {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*corev1.Pod
	for _, e := range s.books.podsByController[controllerKey(pod.Namespace, ref.UID)] {
		if e.awaitsGrouping() && e.Gang == "" && e.pod.Namespace == pod.Namespace && sameController(e.pod, ref) &&
			s.settings.GroupedKinds.Groupable(e.pod, s.settings.SchedulerName) {
			out = append(out, e.pod)
		}
	}
	return out
}

// sameController tells whether pod's controller is ref, group, kind and
// name included.
func sameController(pod *corev1.Pod, ref *metav1.OwnerReference) bool {
	c := metav1.GetControllerOfNoCopy(pod)
	if c == nil || c.UID != ref.UID || c.Kind != ref.Kind || c.Name != ref.Name {
		return false
	}
	g1, _ := schema.ParseGroupVersion(c.APIVersion)
	g2, _ := schema.ParseGroupVersion(ref.APIVersion)
	return g1.Group == g2.Group
}

// GangOf is pod's gang: the one it names (gang.Of), or the one the
// grouper put it in (Grouped). It takes no lock: the queue's sort and
// queueing hints ask it.
func (s *State) GangOf(pod *corev1.Pod) (gang.Key, bool) {
	if k, ok := gang.Of(pod); ok {
		return k, true
	}
	if k, ok := s.books.groupedAs.Load(pod.UID); ok {
		return k.(gang.Key), true
	}
	return "", false
}

// Grouped records the grouper's ruling that pods are members of gang k,
// whose PodGroup it has made: they join it at once, with no write to the
// API server (their gang is written on each when it binds: GroupedInto),
// and its pending pods are woken, as a pod's arrival wakes a gang whose
// pods name their PodGroup. It returns the pods the state has not
// recorded yet: the grouper rules on them again later.
func (s *State) Grouped(pods []*corev1.Pod, k gang.Key) (unrecorded []*corev1.Pod) {
	ns, _ := k.Split()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A gang made whole by these pods wakes its pods itself
	// (refreshGangLocked); one whole already is woken for them here.
	wasAdmissible := false
	if g := s.books.gangs[k]; g != nil {
		wasAdmissible = g.admissible
	}
	var joined []*corev1.Pod
	for _, pod := range pods {
		e := s.books.pods[pod.UID]
		switch {
		case e == nil:
			unrecorded = append(unrecorded, pod)
			continue
		case !e.awaitsGrouping() || pod.Namespace != ns:
			continue
		}
		e.ruling = ruledGrouped
		s.books.groupedAs.Store(pod.UID, k)
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
		if _, held := s.waits.grouping[pod.UID]; held {
			delete(s.waits.grouping, pod.UID)
			joined = append(joined, e.pod)
		}
	}
	g := s.books.gangs[k]
	if g == nil {
		return unrecorded
	}
	s.refreshGangLocked(g)
	if wasAdmissible && g.admissible {
		s.activateLocked(slices.Values(joined))
	}
	s.noteGangLocked(k) // its PodGroup's status counts pods its cache cannot see
	return unrecorded
}

// GroupedInto is the PodGroup the grouper put pod in, "" if it did not
// (or the pod names its PodGroup itself): the Binding writes it on the pod.
func (s *State) GroupedInto(pod *corev1.Pod) string {
	if _, named := gang.Of(pod); named {
		return ""
	}
	if k, ok := s.books.groupedAs.Load(pod.UID); ok {
		_, name := k.(gang.Key).Split()
		return name
	}
	return ""
}

// Ungrouped records the grouper's ruling that pod is a gang of one, and
// wakes it if it waited. It returns false if the state has not recorded the
// pod (its informer has not delivered it yet): the grouper then asks again
// later, so that a ruling is never lost before the pod arrives.
func (s *State) Ungrouped(pod *corev1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.books.pods[pod.UID]
	if e == nil {
		return false
	}
	if e.ruling != unruled {
		return true // ruled already (by a sibling's reconcile)
	}
	e.ruling = ruledAlone
	if p, ok := s.waits.grouping[pod.UID]; ok {
		delete(s.waits.grouping, pod.UID)
		s.activateLocked(slices.Values([]*corev1.Pod{p}))
	}
	return true
}

// Released takes back the grouper's rulings that put pods in gang k, its
// PodGroup deleted while they waited and their workload asking for it no
// more (its annotation removed or changed, its kind no longer grouped):
// its pods not yet placed await a ruling again, and the grouper rules on
// them as on new pods. Placed and terminating pods keep their gang. It
// says whether any pod was released, and whether the state still has
// gang k's PodGroup (its informer has not delivered the deletion yet:
// the grouper asks again).
func (s *State) Released(k gang.Key) (released, stillThere bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.books.gangs[k]
	if g == nil {
		return false, false
	}
	if g.group != nil {
		return false, true
	}
	var pods []*corev1.Pod
	for _, e := range g.members {
		if e.ruling != ruledGrouped || e.placed() || e.terminating {
			continue
		}
		if _, named := gang.Of(e.pod); named {
			continue
		}
		pods = append(pods, e.pod)
	}
	for _, pod := range pods {
		e := s.books.pods[pod.UID]
		e.ruling = unruled
		s.books.groupedAs.Delete(pod.UID)
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
	// Woken, they are held at PreEnqueue until ruled on.
	s.activateLocked(slices.Values(pods))
	return len(pods) > 0, false
}

// GangMember is one pod of gang k that the state has recorded, one not
// placed if it has any, nil if it has none: the grouper reads a gang's
// workload anew from it when the workload or its PodGroup changes.
func (s *State) GangMember(k gang.Key) *corev1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.books.gangs[k]
	if g == nil {
		return nil
	}
	var any *corev1.Pod
	for _, e := range g.members {
		if !e.placed() {
			return e.pod
		}
		any = e.pod
	}
	return any
}

// GangPods are the pods of gang k the state has recorded, pending or
// placed: the status writer of Kubernetes' PodGroups counts them.
func (s *State) GangPods(k gang.Key) []*corev1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.books.gangs[k]
	if g == nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(g.members))
	for _, e := range g.members {
		out = append(out, e.pod)
	}
	return out
}

// PodGroupsUnreadable tells whether PodGroups cannot be read (their CRD
// not installed, or no right to): no pod waits for the grouper meanwhile.
func (s *State) PodGroupsUnreadable() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.wiring.missing[podGroupsAPI] != ""
}

// PlacedAloneUnder tells whether a pod of pod's controller is placed as a
// pod of its own: its workload was started without a gang (annotated
// since), and a new pod of it must not make a gang the placed ones are not
// in, whose min it could never reach alone.
func (s *State) PlacedAloneUnder(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.books.podsByController[controllerKey(pod.Namespace, ref.UID)] {
		if e.placed() && e.Gang == "" && e.pod.Namespace == pod.Namespace && sameController(e.pod, ref) {
			return true
		}
	}
	return false
}

// GroupedAndWaiting tells whether the grouper put pod in a gang and it has
// not been placed: its gang's PodGroup, if deleted, is made again for it.
func (s *State) GroupedAndWaiting(pod *corev1.Pod) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.books.pods[pod.UID]
	return e != nil && e.ruling == ruledGrouped && !e.placed()
}
