package state

import (
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/workload"
)

// Facts are what the state derives from a pod and the objects around it:
// which queue and gang it is in, its preemptibility, and what it asks for.
type Facts struct {
	Queue string
	// Gang is "" for a pod without a PodGroup (a gang of one).
	Gang           gang.Key
	Preemptibility workload.Preemptibility
	// Warning says why the pod's preemptibility label was ignored, if it was.
	Warning  string
	Priority int32
	// Request is what the pod is charged in resources: what it asks for,
	// without cpu and memory if it uses cards and cardUnlimitedCpuMemory is set.
	Request quota.Resources
	// CardRequests are its card resources and how many of each it asks for.
	CardRequests map[corev1.ResourceName]int64
	// CardNames are its card-name alternatives in order; nil = any model.
	CardNames []string
	// CardNamesErr says why its card-name annotation cannot be read.
	CardNamesErr refusal.Refusal
	// Denied says why the pod's namespace may not use Queue (its
	// namespaceSelector, SPEC §1.1), if it may not: such a pod stays
	// pending and is charged nothing to the queue.
	Denied refusal.Refusal
	// OwnerUnseen names the pod's owner whose labels are not known yet
	// (owners.go): its preemptibility may be there, so it waits.
	OwnerUnseen string
}

// podEntry is what the state knows of one pod of Cardinal's profile.
type podEntry struct {
	pod *corev1.Pod
	Facts
	// node is where the pod is placed (reserved or bound); "" while pending.
	node string
	// bound is true once the API shows the pod on node; until then a
	// placed pod is reserved by this scheduler.
	bound bool
	// cards is what a placed pod is charged in cards of each model.
	cards map[string]int64
	// elastic: the pod is placed beyond its gang's min, by rank (gangs.go).
	elastic bool
	// tryAttempt is the attempt of its gang that its last PreFilter joined.
	tryAttempt uint64
	// allowed: the pod, reserved, was let through Permit, and is on its
	// way to bind (set under the read lock, hence atomic).
	allowed atomic.Bool
	// narrowMissed: the pod fit none of the nodes a cycle narrowed it to;
	// it is tried on every node since (narrow.go). A gang's pods share
	// their gang's.
	narrowMissed bool
	// owner are the labels of its top-level owner when its facts were derived.
	owner map[string]string
	// placedAs is how a placed pod was booked when it was placed (SPEC
	// §3.7); nil while pending.
	placedAs *placement
	// waitsFor is the owner the pod is filed as waiting for (owners.go).
	waitsFor string
	// controller is the controllerKey the pod is indexed under (books.go).
	controller string
	// terminating: the placed pod is being deleted. It has left its gang
	// and keeps its node and its charge until it is gone (terminating.go).
	terminating bool
	// ruling is what the grouper ruled of a pod it may group (grouping.go).
	ruling ruling
	// gated: the pod, a member of its gang, is held by kube-scheduler's
	// PreEnqueue (scheduling gates; a resource claim missing), so it does
	// not count toward its gang's min (gangs.go, isGated).
	gated bool
	// claimKeys are the ResourceClaims it is filed under (resourceclaims.go).
	claimKeys []string
	// queuedAlone: the pod passed PreEnqueue as a pod of its own, unruled
	// (of a kind not grouped then): it is never moved into a gang while it
	// may be in the scheduling queue (grouping.go). Set under the read lock.
	queuedAlone atomic.Bool
}

// placement is the queue a pod was placed in, and whether it was placed as
// non-preemptible work: it holds for the pod's life, whatever is relabelled
// after (SPEC §3.7). The binding writes it on the pod (placedas.go), so it
// is the same after a restart.
type placement struct {
	queue          string
	nonPreemptible bool
}

func (e *podEntry) placed() bool { return e.node != "" }

// factsLocked derives a pod's facts; ownerLabels are its top-level owner's.
func (s *State) factsLocked(pod *corev1.Pod, ownerLabels map[string]string) Facts {
	k, _ := s.GangOf(pod)
	pgLabels := s.podGroupLabelsLocked(pod)
	queue := s.queueOfLocked(pod)
	f := Facts{
		Queue:       queue,
		Denied:      s.deniedLocked(queue, pod.Namespace),
		OwnerUnseen: s.ownerUnseenLocked(pod),
		Gang:        k,
		Priority:    podPriority(pod),
		Request:     quota.PodRequests(pod),
	}
	f.Preemptibility, f.Warning = workload.Classify(pod, pgLabels, ownerLabels, s.settings.PreemptibleBelowPriority)
	f.CardRequests = cardmodel.CardRequests(pod, s.books.isCardResource)
	if len(f.CardRequests) > 0 && s.settings.CardUnlimitedCPUMemory {
		delete(f.Request, corev1.ResourceCPU)
		delete(f.Request, corev1.ResourceMemory)
	}
	if v, from, ok := cardmodel.Annotation(pod.Annotations, v1alpha1.CardNameAnnotation, v1alpha1.VolcanoCardNameAnnotation); ok {
		names, err := cardmodel.ParseNames(v)
		if err != nil {
			f.CardNamesErr = refusal.AnnotationInvalid{Object: "pod " + pod.Namespace + "/" + pod.Name, Annotation: from, Problem: err.Error()}
		}
		f.CardNames = names
	}
	return f
}

func podPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// factsMayChange tells whether an update of a pod can change its facts:
// labels and annotations, or its spec (resources, resized in place).
func factsMayChange(old, pod *corev1.Pod) bool {
	return old.Generation != pod.Generation || !maps.Equal(old.Labels, pod.Labels) || !maps.Equal(old.Annotations, pod.Annotations)
}

// upsertPodLocked records a live pod of Cardinal's profile as the API shows
// it. A pod the API shows on a node is placed there (bound); a pod this
// scheduler reserved stays placed until it is bound, unreserved or gone.
// owner returns the labels of the pod's top-level owner (read from the
// informers' listers, in memory); it is called only when the pod's facts
// must be derived.
func (s *State) upsertPodLocked(pod *corev1.Pod, owner func() map[string]string) *podEntry {
	e := s.books.pods[pod.UID]
	if e == nil {
		e = &podEntry{pod: pod, owner: owner()}
		e.Facts = s.factsLocked(pod, e.owner)
		s.books.add(e)
		s.joinGangLocked(e)
		s.chargeLocked(e, 1)
	} else {
		old := e.pod
		s.books.setPod(e, pod)
		if factsMayChange(old, pod) {
			e.owner = owner()
			s.setFactsLocked(e, s.factsLocked(pod, e.owner))
		}
		if claimsChanged(old, pod) {
			s.regateLocked(e)
		}
	}
	if pod.Spec.NodeName != "" && !e.bound {
		if e.placed() && e.node != pod.Spec.NodeName {
			s.unplaceLocked(e)
		}
		if e.placed() {
			s.bindLocked(e)
		} else {
			s.chargeLocked(e, -1)
			s.readPlacementLocked(e)
			s.chargeLocked(e, 1)
			s.placeLocked(e, pod.Spec.NodeName, true)
		}
	}
	return e
}

// setFactsLocked charges a pod anew under changed facts. A placed pod stays
// in the queue it was placed in (SPEC §3.7).
func (s *State) setFactsLocked(e *podEntry, f Facts) {
	if e.terminating {
		return // booked as it was until it is gone
	}
	if e.placedAs != nil && f.Queue != e.placedAs.queue {
		s.reportLocked(podRef(e.pod), "QueueKept", "Scheduling", fmt.Sprintf(
			"pod %s/%s was placed in queue %s and stays charged to it until it is gone; queue %s applies to pods placed from now on",
			e.pod.Namespace, e.pod.Name, e.placedAs.queue, f.Queue))
		f.Queue = e.placedAs.queue
		f.Denied = nil
	} else if e.placedAs != nil {
		s.reportLocked(podRef(e.pod), "QueueKept", "Scheduling", "")
		f.Denied = nil // placed where its namespace could: it keeps running there
	}
	if e.Denied != nil && f.Denied == nil && f.Queue == e.Queue && s.waitingLocked(e) {
		// Its namespace may use the queue now.
		s.activateLocked(slices.Values([]*corev1.Pod{e.pod}))
	}
	if f.Queue != e.Queue && !e.placed() && f.Gang == e.Gang {
		// Once its facts are set, below: whether its gang left the queue
		// its preemption was for counts this pod in its new queue.
		defer s.leftPreemptionQueueLocked(e)
	}
	if f.Queue != e.Queue {
		if e.placed() {
			s.roomFreedLocked(e.Queue)
		} else if s.waitingLocked(e) {
			// Turned away by its old queue: the new one may have room.
			s.activateLocked(slices.Values([]*corev1.Pod{e.pod}))
		}
	}
	s.forgetWaitLocked(e)
	s.chargeLocked(e, -1)
	defer s.dropQueueIfUnusedLocked(e.Queue)
	if f.Gang != e.Gang {
		s.leaveGangLocked(e)
		e.Facts = f
		s.joinGangLocked(e)
	} else {
		if g := s.books.gangs[e.Gang]; g != nil && f.Queue != e.Queue {
			g.countQueue(e.Queue, -1)
			g.countQueue(f.Queue, 1)
		}
		e.Facts = f
	}
	if e.placed() {
		e.cards = s.podCardsLocked(e)
	}
	s.chargeLocked(e, 1)
	s.warnKeptPreemptibleLocked(e)
}

// removePodLocked forgets a pod: deleted, finished, or no longer Cardinal's.
func (s *State) removePodLocked(uid types.UID) {
	e := s.books.pods[uid]
	if e == nil {
		return
	}
	s.chargeLocked(e, -1)
	s.forgetWaitLocked(e)
	delete(s.books.evicted, uid)
	// A victim that is only terminating still holds its node: it stays a
	// victim until it is deleted or finished (OnPodDeleted, OnPod).
	s.preemptions.claimDone(uid)
	delete(s.preemptions.unnominated, uid)
	if e.placed() {
		s.leftLocked(e)
		s.books.podsOn.remove(e.node, e.pod.UID)
		if g := s.books.gangs[e.Gang]; g != nil {
			s.removePlacedLocked(g, e)
		}
		e.node, e.bound, e.cards, e.elastic = "", false, nil, false
		s.roomFreedLocked(e.Queue)
	}
	s.leaveGangLocked(e)
	if g := s.books.gangs[e.Gang]; g != nil && e.terminating && g.terminating > 0 {
		g.terminating--
		s.refreshGangLocked(g)
	}
	s.dropQueueIfUnusedLocked(e.Queue)
	s.books.remove(e)
	s.waitForOwnerLocked(e, "")
	s.waits.forget(e.Gang, uid)
	s.books.groupedAs.Delete(uid)
	s.forgetReportsLocked("Pod", e.pod.Namespace+"/"+e.pod.Name, "QueueKept", "PreemptibilityKept", "PodGroupsUnreadable", "OwnerUnseen")
}

// placeLocked records a pod as placed on node: reserved by this scheduler,
// or bound when the API shows it there. It moves the pod's charge from
// pending to allocated, in resources and in cards of node's models.
func (s *State) placeLocked(e *podEntry, node string, bound bool) {
	s.forgetWaitLocked(e)
	s.useClaimLocked(e.pod, node)
	s.chargeLocked(e, -1)
	e.node, e.bound = node, bound
	e.cards = s.podCardsLocked(e)
	s.books.podsOn.add(node, e.pod.UID, e)
	if g := s.books.gangs[e.Gang]; g != nil {
		s.insertPlacedLocked(g, e)
	}
	if e.placedAs == nil && !bound {
		// Placed by this scheduler: booked as decided. A pod first seen
		// bound is booked as its binding recorded (readPlacementLocked).
		e.placedAs = &placement{queue: e.Queue, nonPreemptible: e.wouldBeNonPreemptible()}
	}
	s.chargeLocked(e, 1)
	if g := s.books.gangs[e.Gang]; g != nil {
		s.refreshGangLocked(g)
	}
}

// unplaceLocked gives back exactly what placeLocked charged: the pod is
// pending again.
func (s *State) unplaceLocked(e *podEntry) {
	if !e.placed() {
		return
	}
	// A victim rejected at Permit or in PreBind frees its room as one
	// deleted does; a member that gives back its room has it kept again.
	s.victimGoneLocked(e.pod.UID)
	s.unuseClaimLocked(e.pod)
	s.chargeLocked(e, -1)
	s.books.podsOn.remove(e.node, e.pod.UID)
	g := s.books.gangs[e.Gang]
	if g != nil {
		s.removePlacedLocked(g, e)
	}
	booked := e.placedAs
	e.node, e.bound, e.cards, e.elastic, e.placedAs = "", false, nil, false, nil
	e.allowed.Store(false)
	s.chargeLocked(e, 1)
	s.roomFreedLocked(e.Queue)
	if g != nil {
		s.refreshGangLocked(g)
	}
	if booked != nil {
		// Pending again, it follows its labels and its namespace's rights
		// as they are now, not as they were when it was placed.
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

// bindLocked records that the API shows a reserved pod bound where it was reserved.
func (s *State) bindLocked(e *podEntry) {
	e.bound = true
	if g := s.books.gangs[e.Gang]; g != nil {
		g.reserved--
		s.refreshGangLocked(g)
	}
}

// podCardsLocked is what a placed pod is charged in cards, by its node's
// labels (cardmodel.Node.PodCards). A pod whose node is not known (deleted
// under it) keeps what it was charged until it goes: nothing charged is lost.
func (s *State) podCardsLocked(e *podEntry) map[string]int64 {
	if n := s.books.nodes[e.node]; n != nil {
		return n.models.Charge(e.CardRequests)
	}
	return e.cards
}

// chargeLocked adds (sign 1) or removes (sign -1) what a pod counts for in
// its queue (queueEntry.charge). Every change of a pod's entry is bracketed
// by chargeLocked(-1) and chargeLocked(1), so the queue's sums are always
// the sums of its pods.
func (s *State) chargeLocked(e *podEntry, sign int64) {
	if s.books.queue(e.Queue).charge(e, sign) {
		s.notifyLocked()
	}
}
