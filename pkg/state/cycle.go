package state

import (
	"maps"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// Candidate is what the quota plugins judge a pod by in a scheduling cycle:
// its facts, and what placing it would do to its queue's non-preemptible
// use (SPEC §3.5).
type Candidate struct {
	Facts
	// NonPreemptible: placed now, the pod would be charged as non-preemptible.
	NonPreemptible bool
	// Displaced, when not nil, is the charge of the min member of the pod's
	// semi-preemptible gang that placing it would push out to elastic: it
	// leaves the queue's non-preemptible use as the pod enters it.
	Displaced *Charge
	// NarrowMissed: the pod, or another pod of its gang since the gang's
	// min was last bound, fit none of the nodes its cycle was narrowed
	// to: it is not narrowed (narrow.go).
	NarrowMissed bool
}

// QueueOf is the queue a pod resolves to now (SPEC §1.1), whether the
// state knows the pod or not (a queueing hint may ask about a pod already
// deleted).
func (s *State) QueueOf(pod *corev1.Pod) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.queueOfLocked(pod)
}

func (s *State) queueOfLocked(pod *corev1.Pod) string {
	return workload.QueueName(s.podGroupLabelsLocked(pod), pod.Labels, s.namespaces[pod.Namespace], s.settings.DefaultQueue)
}

func (s *State) podGroupLabelsLocked(pod *corev1.Pod) map[string]string {
	if k, ok := gang.Of(pod); ok {
		if g := s.gangs[k]; g != nil && g.group != nil {
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
	if v, ok := s.gangCreated.Load(k); ok {
		return v.(time.Time), true
	}
	return time.Time{}, false
}

// Candidate returns what placing pod now would charge, by the same rules
// Reserve charges it with.
func (s *State) Candidate(pod *corev1.Pod) Candidate {
	s.mu.RLock()
	if e := s.pods[pod.UID]; e != nil {
		defer s.mu.RUnlock()
		return s.candidateLocked(e, pod)
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, _ := s.ensurePodLocked(pod)
	return s.candidateLocked(e, pod)
}

// candidateLocked reads the state only; the read lock is enough.
func (s *State) candidateLocked(e *podEntry, pod *corev1.Pod) Candidate {
	c := Candidate{Facts: e.Facts, NarrowMissed: s.narrowMissedLocked(e)}
	switch e.Preemptibility {
	case workload.NonPreemptible:
		c.NonPreemptible = true
	case workload.SemiPreemptible:
		g := s.gangs[e.Gang]
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
				c.Displaced = &Charge{Queue: d.Queue, Placed: true, Request: d.Request, Cards: maps.Clone(d.cards), NonPreemptible: true}
			}
		}
	}
	return c
}

// Charge is what one pod is charged: its queue, whether it is placed, its
// request and cards, and whether it counts as non-preemptible.
type Charge struct {
	Queue          string
	Placed         bool
	Request        quota.Resources
	Cards          map[string]int64
	NonPreemptible bool
	Elastic        bool
}

// ChargeOf returns what a pod is charged; false for a pod the state does
// not know. Preemption simulation reads it for the pods it adds and removes.
func (s *State) ChargeOf(pod *corev1.Pod) (Charge, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.pods[pod.UID]
	if e == nil {
		return Charge{}, false
	}
	return Charge{Queue: e.Queue, Placed: e.placed(), Request: e.Request, Cards: maps.Clone(e.cards), NonPreemptible: e.nonPreemptible(), Elastic: e.elastic}, true
}
