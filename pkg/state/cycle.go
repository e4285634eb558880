package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/workload"
)

// QueueOf is the queue a pod resolves to now (SPEC §1.1), whether the
// state knows the pod or not (a queueing hint may ask about a pod already
// deleted).
func (s *State) QueueOf(pod *corev1.Pod) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.queueOfLocked(pod)
}

func (s *State) queueOfLocked(pod *corev1.Pod) string {
	return workload.QueueName(s.podGroupLabelsLocked(pod), pod.Labels, s.books.namespaces[pod.Namespace], s.settings.DefaultQueue)
}

func (s *State) podGroupLabelsLocked(pod *corev1.Pod) map[string]string {
	if k, ok := s.GangOf(pod); ok {
		if g := s.books.gangs[k]; g != nil && g.group != nil {
			return g.group.Labels
		}
	}
	return nil
}

// GangCreated is when a gang's PodGroup was created, for the queue order;
// false while the state has seen no PodGroup for it. It never changes for
// a gang the state knows (the queue's heap needs fixed keys, even if the
// PodGroup is deleted and created again), and takes no lock: the
// scheduling queue calls it under its own, for every comparison.
func (s *State) GangCreated(k gang.Key) (time.Time, bool) {
	if v, ok := s.books.gangCreated.Load(k); ok {
		return v.(time.Time), true
	}
	return time.Time{}, false
}

// GangAdmitted is when a gang was first admissible (its PodGroup seen and
// minMember pods of it there), for the queue order among gangs whose
// PodGroups were made in the same second: none of a gang's pods is in
// the scheduling queue before then, so the queue sorts it from the start
// with a key that then never changes. Gangs taken from the queue in the
// order they became admissible are placed one after the other, rather than
// one's pods taken while another's are half placed, which parks them
// (workloads the grouper groups become admissible one by one). Takes no
// lock, as GangCreated.
func (s *State) GangAdmitted(k gang.Key) time.Time {
	if v, ok := s.books.gangAdmitted.Load(k); ok {
		return v.(time.Time)
	}
	return time.Time{}
}

// Prospect returns what placing pod now would charge, by the same rules
// Reserve charges it with. It only reads: a pod the state has not seen yet
// (kube-scheduler's informer handler can run before the state's) is judged
// by its facts as the state would record them, and is recorded by the
// informer, or by Reserve if it is placed first.
func (s *State) Prospect(pod *corev1.Pod) PodView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.books.pods[pod.UID]
	if e == nil {
		e = &podEntry{pod: pod, owner: s.wiring.kube.owners.Labels(pod)}
		e.Facts = s.factsLocked(pod, e.owner)
	}
	return s.prospectLocked(e, pod)
}

// Reserve records a pod as placed on node, charging its queue (SPEC §4.1),
// and counts it for its gang. It is idempotent: the gang and queue plugins
// both call it from Reserve, whichever runs first places the pod. A min
// member whose gang gave up the attempt its PreFilter joined (a sibling
// failed meanwhile) is refused: it would wait alone at Permit.
func (s *State) Reserve(pod *corev1.Pod, node string) *fwk.Status {
	return s.ReserveAsChecked(pod, node, nil)
}

// Checked is what a pod's PreFilter checked it as: its queue and the
// preemptibility its labels gave.
type Checked struct {
	Queue string
	Class workload.Preemptibility
}

// changedSinceLocked says how a pod's labels changed its queue, its right
// to it, or its preemptibility since they were queue and class (nil if
// they did not): a relabel between PreFilter and Reserve must not book
// what was not checked (SPEC §3.5, §3.7).
func changedSinceLocked(e *podEntry, queue string, class workload.Preemptibility) refusal.Refusal {
	switch {
	case e.Queue != queue:
		return refusal.Relabelled{What: "queue", From: queue, To: e.Queue}
	case e.Denied != nil:
		return e.Denied
	case e.OwnerUnseen != "":
		return refusal.OwnerUnseen{Owner: e.OwnerUnseen}
	case e.Preemptibility != class:
		return refusal.Relabelled{What: "preemptibility", From: string(class), To: string(e.Preemptibility)}
	}
	return nil
}

// prospectLocked reads the state only; the read lock is enough.
func (s *State) prospectLocked(e *podEntry, pod *corev1.Pod) PodView {
	c := PodView{Facts: e.Facts, Pod: pod, NarrowMissed: s.narrowMissedLocked(e)}
	switch e.Preemptibility {
	case workload.NonPreemptible:
		c.NonPreemptible = true
	case workload.SemiPreemptible:
		g := s.books.gangs[e.Gang]
		if g == nil || g.group == nil {
			c.NonPreemptible = true
			break
		}
		m := g.min()
		i := sort.Search(len(g.placed), func(i int) bool { return !gang.Less(g.placed[i].pod, pod) })
		if i < m {
			c.NonPreemptible = true
			if len(g.placed) >= m && g.placed[m-1].nonPreemptible() {
				d := g.placed[m-1]
				displaced := d.view()
				c.Displaced = &displaced
			}
		}
	}
	return c
}

// ChargeOf returns what a pod is charged; false for a pod the state does
// not know. Preemption simulation reads it for the pods it adds and removes.
func (s *State) ChargeOf(pod *corev1.Pod) (PodView, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.books.pods[pod.UID]
	if e == nil {
		return PodView{}, false
	}
	return e.view(), true
}
