package state

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/pkg/gang"
)

// waits are the pods turned away by a decision made from the state, filed
// by what they wait for, so that the change that can let them in wakes
// them and nothing else does.
type waits struct {
	// room are pods waiting for room in a queue, by queue; models the
	// card pods among them, woken too when a node's card models change.
	room   map[string]map[types.UID]*corev1.Pod
	models map[types.UID]*corev1.Pod
	// owner are pending pods waiting for an owner to be seen, by the owner
	// ("ReplicaSet ns/name", as Facts.OwnerUnseen names it).
	owner map[string]map[types.UID]*corev1.Pod
	// parkedGangs are the pods of gangs turned away while another gang was
	// being placed; parkedElastic the elastic pods turned away while gangs
	// waited for their min (assembly.go).
	parkedGangs   map[gang.Key]map[types.UID]*corev1.Pod
	parkedElastic map[types.UID]*corev1.Pod
	// deferred are gang pods turned away by admission before the state synced.
	deferred map[types.UID]*corev1.Pod
}

func newWaits() waits {
	return waits{
		room:          map[string]map[types.UID]*corev1.Pod{},
		models:        map[types.UID]*corev1.Pod{},
		owner:         map[string]map[types.UID]*corev1.Pod{},
		parkedGangs:   map[gang.Key]map[types.UID]*corev1.Pod{},
		parkedElastic: map[types.UID]*corev1.Pod{},
		deferred:      map[types.UID]*corev1.Pod{},
	}
}

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
	w := s.waits.room[queue]
	if w == nil {
		w = map[types.UID]*corev1.Pod{}
		s.waits.room[queue] = w
	}
	w[pod.UID] = pod
	if usesCards {
		s.waits.models[pod.UID] = pod
	}
}

// roomFreedLocked wakes the pods waiting for room in queue.
func (s *State) roomFreedLocked(queue string) {
	w := s.waits.room[queue]
	if len(w) == 0 {
		return
	}
	delete(s.waits.room, queue)
	for uid := range w {
		delete(s.waits.models, uid)
	}
	s.activateLocked(maps.Values(w))
}

// modelsChangedLocked wakes the card pods waiting for room, when a node's
// card models changed.
func (s *State) modelsChangedLocked() {
	if len(s.waits.models) == 0 {
		return
	}
	for uid, p := range s.waits.models {
		q := s.queueOfLocked(p)
		if w := s.waits.room[q]; w != nil {
			delete(w, uid)
			if len(w) == 0 {
				delete(s.waits.room, q)
			}
		}
	}
	s.activateLocked(maps.Values(s.waits.models))
	s.waits.models = map[types.UID]*corev1.Pod{}
}

// waitingLocked tells whether a pod waits for room.
func (s *State) waitingLocked(e *podEntry) bool {
	_, ok := s.waits.room[e.Queue][e.pod.UID]
	return ok
}

// forgetWaitLocked drops a pod placed or gone from the waits.
func (s *State) forgetWaitLocked(e *podEntry) {
	if w := s.waits.room[e.Queue]; w != nil {
		delete(w, e.pod.UID)
		if len(w) == 0 {
			delete(s.waits.room, e.Queue)
		}
	}
	delete(s.waits.models, e.pod.UID)
}

// wakePendingLocked wakes a gang's members not placed: when the gang becomes
// admissible (its PodGroup arrived, it reached minMember pods, a split was
// mended), or a change of its PodGroup may admit it while it is held.
func (s *State) wakePendingLocked(g *gangEntry) {
	s.activateLocked(pending(g))
}
