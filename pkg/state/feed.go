package state

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/requeue"
)

// ensurePodLocked returns a pod's entry, recording the pod first if the
// state has not seen it yet: the scheduler's own informer handler can run
// before the state's. What is recorded is the informer's copy, as the
// state's own handler would record it: the pod kube-scheduler hands to
// Reserve is its assumed copy, already showing the node it is reserved on,
// which recorded would read as bound there. A pod the informer no longer
// has was deleted (and its delete already delivered, or about to be): it
// gets an entry to be judged by, which is not recorded, so it cannot come
// back as a ghost.
func (s *State) ensurePodLocked(pod *corev1.Pod) (e *podEntry, recorded bool) {
	if e := s.books.pods[pod.UID]; e != nil {
		return e, true
	}
	if s.wiring.kube.pods != nil {
		cur, err := s.wiring.kube.pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || cur.UID != pod.UID {
			e := &podEntry{pod: pod, owner: s.wiring.kube.owners.Labels(pod)}
			e.Facts = s.factsLocked(pod, e.owner)
			return e, false
		}
		pod = cur
	}
	owner := func() map[string]string { return s.wiring.kube.owners.Labels(pod) }
	return s.upsertPodLocked(pod, owner), true
}

// OnPod records a pod added or updated, as the pod informer delivers it:
// a pod of Cardinal's profile is recorded and charged; a pod of another
// scheduler that joins a gang is remembered against that gang.
func (s *State) OnPod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName != s.settings.SchedulerName {
		_, inGang := gang.Of(pod)
		s.mu.RLock()
		_, known := s.books.foreign[pod.UID]
		s.mu.RUnlock()
		if inGang || known {
			s.mu.Lock()
			s.upsertForeignLocked(pod)
			s.mu.Unlock()
		}
		return
	}
	if pod.DeletionTimestamp != nil && pod.Spec.NodeName != "" && !finished(pod) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.terminatingLocked(pod, func() map[string]string { return s.wiring.kube.owners.Labels(pod) })
		return
	}
	if isTerminal(pod) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if finished(pod) {
			s.victimGoneLocked(pod.UID) // finished: its node is free
		}
		s.podGoneLocked(pod)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	owner := func() map[string]string { return s.wiring.kube.owners.Labels(pod) }
	s.upsertPodLocked(pod, owner)
	s.renominatedLocked(pod)
}

// OnPodDeleted forgets a deleted pod; a victim of a preemption under way is
// gone for good, so its room is free for the preemptor.
func (s *State) OnPodDeleted(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.victimGoneLocked(pod.UID)
	s.preemptions.claimDone(pod.UID)
	s.podGoneLocked(pod)
}

// podGoneLocked forgets a deleted or finished pod. A gang that loses
// members below its min while others wait at Permit cannot complete: they
// give back their nodes at once, without a backoff (the gang waits for
// members).
func (s *State) podGoneLocked(pod *corev1.Pod) {
	if pod.Spec.SchedulerName != s.settings.SchedulerName {
		s.removeForeignLocked(pod)
		return
	}
	e := s.books.pods[pod.UID]
	if e == nil {
		return
	}
	s.removePodLocked(pod.UID)
	if e.terminating {
		return // it left its gang when its deletion began
	}
	if g := s.books.gangs[e.Gang]; g != nil && g.group != nil && g.triable() < g.min() {
		// A member past its PreFilter but not yet reserved must not reserve
		// either: failLocked ends the attempt it joined.
		s.failLocked(g, fmt.Sprintf("it has %d of its minMember %d pods left", g.triable(), g.min()), false)
	}
}

// OnPodGroup records a PodGroup added or updated. Its labels give its
// members their queue and preemptibility; a changed minMember gives its
// placed pods their roles anew, lets members waiting at Permit bind when a
// lowered min is met, and makes them give back their nodes when a raised
// min cannot be.
func (s *State) OnPodGroup(pg *schedv1alpha1.PodGroup) {
	s.onGroup(gang.KeyOf(pg), pg)
}

// OnNativePodGroup records a Kubernetes PodGroup (scheduling.k8s.io) added
// or updated: a gang as a scheduler-plugins PodGroup is, whose minMember is
// its gang policy's minCount (SPEC §1.2).
func (s *State) OnNativePodGroup(pg *schedulingv1beta1.PodGroup) {
	s.onGroup(gang.NativeKey(pg.Namespace, pg.Name), nativeGroup(pg))
}

// onGroup records gang k's PodGroup, pg, added or updated.
func (s *State) onGroup(k gang.Key, pg *schedv1alpha1.PodGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gangLocked(k)
	old := g.group
	g.group = pg
	if g.groupUID != "" && g.groupUID != pg.UID && g.gaveUp == 0 {
		// Another PodGroup of the name (a workload deleted and made
		// again): it does not inherit the backoff of the one before,
		// unless that one gave up at Permit (reserve.go): making the
		// PodGroup again must not let a gang whose members wait for a
		// pod that never comes take the gang being placed at once.
		g.backoffUntil, g.lastFailure = time.Time{}, ""
	}
	g.groupUID = pg.UID
	if old == nil || old.UID != pg.UID {
		// A PodGroup created anew waits since its creation, and is
		// narrowed anew (narrow.go).
		g.minBound, g.waitSince, g.narrowMissed = "", time.Time{}, false
	}
	s.books.gangCreated.LoadOrStore(g.key, pg.CreationTimestamp.Time)
	if old == nil || !maps.Equal(old.Labels, pg.Labels) {
		s.rederiveGangFactsLocked(g)
	}
	if k.Native() && (old == nil || old.Spec.MinMember != pg.Spec.MinMember || !maps.Equal(old.Labels, pg.Labels)) {
		// kube-scheduler has no event of Kubernetes' PodGroups while its
		// own gang handling is off (cmd/scheduler): the pods that waited
		// for this one, or for its min, are woken here.
		s.wakePendingLocked(g)
	} else if old != nil && len(g.held) > 0 {
		if c, err := requeue.Of(old, pg); err == nil && c.PodGroupAdmission() {
			// What holds the gang may have been mended (its card request, min or queue).
			s.wakePendingLocked(g)
		}
	}
	if old == nil || old.Spec.MinMember != pg.Spec.MinMember {
		s.setRolesLocked(g)
		if g.reserved > 0 && !g.needsMin() {
			// A lowered min is met: the members waiting at Permit bind now.
			s.allowLocked(allowReservedLocked(g))
		} else if g.reserved > 0 && g.triable() < g.min() {
			s.failLocked(g, fmt.Sprintf("its minMember was raised to %d and it has %d pods", g.min(), g.triable()), false)
		}
	}
	s.refreshGangLocked(g)
}

// OnPodGroupGone: the gang's pods count on their own until the PodGroup is
// back; members waiting at Permit give back their nodes (none binds alone).
func (s *State) OnPodGroupGone(pg *schedv1alpha1.PodGroup) {
	s.groupGone(gang.KeyOf(pg))
}

// OnNativePodGroupGone is OnPodGroupGone for a Kubernetes PodGroup.
func (s *State) OnNativePodGroupGone(pg *schedulingv1beta1.PodGroup) {
	s.groupGone(gang.NativeKey(pg.Namespace, pg.Name))
}

func (s *State) groupGone(k gang.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.books.gangs[k]
	if g == nil {
		return
	}
	if g.reserved > 0 {
		s.failLocked(g, "its PodGroup was deleted", false)
	}
	g.group = nil
	s.rederiveGangFactsLocked(g)
	s.setRolesLocked(g)
	s.refreshGangLocked(g)
}

// rederiveGangFactsLocked derives a gang's members' facts anew (their queue and
// preemptibility come from its PodGroup's labels).
func (s *State) rederiveGangFactsLocked(g *gangEntry) {
	for _, e := range g.members {
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

// OnQueue records a Queue added or updated; a Queue whose
// volcano.sh/card.quota cannot be read gets an event, once per problem.
func (s *State) OnQueue(q *v1alpha1.Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.upsertQueueLocked(q)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	s.reportLocked(queueRef(q), "InvalidCardQuota", "Admission", msg)
	s.reportRenamedModelsLocked(q)
}

// OnQueueGone forgets a Queue's spec; what its pods use is kept.
func (s *State) OnQueueGone(q *v1alpha1.Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteQueueLocked(q.Name)
	s.forgetReportsLocked("Queue", q.Name, "InvalidCardQuota", "RenamedCardModel", "InvalidNamespaceSelector")
}

func queueRef(q *v1alpha1.Queue) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Queue", Name: q.Name, UID: q.UID}
}

// reportRenamedModelsLocked warns, on the Queue, about each card model it
// lists under the name Cardinal gave MPS shares before SPEC §1.4 said how to
// name them: pods on those cards are charged under the new name, so quota
// kept under the old one is never used until the Queue is edited.
func (s *State) reportRenamedModelsLocked(q *v1alpha1.Queue) {
	var renamed []string
	if e := s.books.queues[q.Name]; e != nil && len(s.books.renamedModels) > 0 {
		for model, c := range e.cards {
			// A former name that some node carries as its model now is
			// that model, not a stale name.
			if now, ok := s.books.renamedModels[model]; ok && c.Listed && s.books.cardCapacity[model] == 0 {
				renamed = append(renamed, fmt.Sprintf("%s is now named %s", model, now))
			}
		}
	}
	msg := ""
	if len(renamed) > 0 {
		slices.Sort(renamed)
		msg = fmt.Sprintf("queue %s lists card models under former names, so their quota is not used: %s (MPS shares are named after the whole card's memory in GiB); rename them in spec.cards",
			q.Name, strings.Join(renamed, "; "))
	}
	s.reportLocked(queueRef(q), "RenamedCardModel", "Admission", msg)
}

// OnNamespace re-derives the facts of a namespace's pods when its labels
// change (a pod seen before its namespace, or a namespace moved to another
// queue).
func (s *State) OnNamespace(ns *corev1.Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.books.namespaces[ns.Name]; ok && maps.Equal(old, ns.Labels) {
		return
	}
	s.books.namespaces[ns.Name] = ns.Labels
	for _, e := range s.books.inNamespace[ns.Name] {
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

func (s *State) onNamespaceGone(ns *corev1.Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.books.namespaces, ns.Name)
}

// OnNode records a node's card models and tells an operator, through an
// event, when its GPUs carry no product label (SPEC §1.4).
func (s *State) OnNode(node *corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	detected, changed := s.upsertNodeLocked(node)
	if !changed {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	s.reportLocked(ref, "UnlabelledCards", "CardModel", unlabelledMessage(node.Name, detected.Unlabelled))
	for _, c := range detected.Cards {
		if c.Former == "" || s.books.renamedModels[c.Former] == c.Model {
			continue
		}
		s.books.renamedModels[c.Former] = c.Model
		for _, q := range s.books.queues {
			if q.spec != nil && q.cards[c.Former] != nil {
				s.reportRenamedModelsLocked(q.spec)
			}
		}
	}
}

// OnNodeGone forgets a node; pods still on it keep their charge.
func (s *State) OnNodeGone(node *corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteNodeLocked(node.Name)
	s.forgetReportsLocked("Node", node.Name, "UnlabelledCards")
}
