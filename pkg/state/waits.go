package state

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pods turned away by a decision made from the state are woken by the
// state itself when it applies the change that can let them in. Queueing
// hints alone are not enough: kube-scheduler evaluates them on its own
// informers, which may deliver an event (a Queue raised, a pod gone, a new
// node) before the state's informers do, so a pod requeued by a hint can
// be judged on numbers that do not have the change yet, be turned away
// again, and wait for an event that never comes. Each wake-up below wakes
// only the pods that were waiting for that kind of change.

// WaitForRoom records a pod that waits for room in queue: turned away by
// its queue's capability, guarantee or card quota, at admission or in a
// scheduling cycle. It is woken when a placed pod of the queue leaves or
// the Queue changes. usesCards also wakes it when a node's card models
// change (a card pod may be turned away because no node has its model).
func (s *State) WaitForRoom(pod *corev1.Pod, queue string, usesCards bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitForRoomLocked(pod, queue, usesCards)
}

func (s *State) waitForRoomLocked(pod *corev1.Pod, queue string, usesCards bool) {
	w := s.waitingRoom[queue]
	if w == nil {
		w = map[types.UID]*corev1.Pod{}
		s.waitingRoom[queue] = w
	}
	w[pod.UID] = pod
	if usesCards {
		s.waitingModels[pod.UID] = pod
	}
}

// roomFreedLocked wakes the pods waiting for room in queue.
func (s *State) roomFreedLocked(queue string) {
	w := s.waitingRoom[queue]
	if len(w) == 0 {
		return
	}
	delete(s.waitingRoom, queue)
	for uid := range w {
		delete(s.waitingModels, uid)
	}
	s.activateLocked(maps.Values(w))
}

// modelsChangedLocked wakes the card pods waiting for room, when a node's
// card models changed.
func (s *State) modelsChangedLocked() {
	if len(s.waitingModels) == 0 {
		return
	}
	for uid, p := range s.waitingModels {
		q := s.queueOfLocked(p)
		if w := s.waitingRoom[q]; w != nil {
			delete(w, uid)
			if len(w) == 0 {
				delete(s.waitingRoom, q)
			}
		}
	}
	s.activateLocked(maps.Values(s.waitingModels))
	s.waitingModels = map[types.UID]*corev1.Pod{}
}

// waitingLocked tells whether a pod waits for room.
func (s *State) waitingLocked(e *podEntry) bool {
	_, ok := s.waitingRoom[e.Queue][e.pod.UID]
	return ok
}

// forgetWaitLocked drops a pod placed or gone from the waits.
func (s *State) forgetWaitLocked(e *podEntry) {
	if w := s.waitingRoom[e.Queue]; w != nil {
		delete(w, e.pod.UID)
		if len(w) == 0 {
			delete(s.waitingRoom, e.Queue)
		}
	}
	delete(s.waitingModels, e.pod.UID)
}

// wakePendingLocked wakes a gang's members not placed: when the gang becomes
// admissible (its PodGroup arrived, it reached minMember pods, a split was
// mended), or a change of its PodGroup may admit it while it is held.
func (s *State) wakePendingLocked(g *gangEntry) {
	s.activateLocked(pending(g))
}
