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
	room   index[string, *corev1.Pod]
	models map[types.UID]*corev1.Pod
	// owner are pending pods waiting for an owner to be seen, by the owner
	// ("ReplicaSet ns/name", as Facts.OwnerUnseen names it).
	owner index[string, *corev1.Pod]
	// parkedGangs are the pods of gangs turned away while another gang was
	// being placed; parkedElastic the elastic pods turned away while gangs
	// waited for their min (assembly.go).
	parkedGangs   index[gang.Key, *corev1.Pod]
	parkedElastic map[types.UID]*corev1.Pod
	// deferred are gang pods turned away by admission before the state synced.
	deferred map[types.UID]*corev1.Pod
	// grouping are pods held until the grouper has ruled on them (grouping.go).
	grouping map[types.UID]*corev1.Pod
}

func newWaits() waits {
	return waits{
		room:          index[string, *corev1.Pod]{},
		models:        map[types.UID]*corev1.Pod{},
		owner:         index[string, *corev1.Pod]{},
		parkedGangs:   index[gang.Key, *corev1.Pod]{},
		parkedElastic: map[types.UID]*corev1.Pod{},
		deferred:      map[types.UID]*corev1.Pod{},
		grouping:      map[types.UID]*corev1.Pod{},
	}
}

// forRoom files a pod as waiting for room in queue; usesCards files it
// for a change of nodes' card models too.
func (w *waits) forRoom(pod *corev1.Pod, queue string, usesCards bool) {
	w.room.add(queue, pod.UID, pod)
	if usesCards {
		w.models[pod.UID] = pod
	}
}

// takeRoom removes and returns the pods waiting for room in queue.
func (w *waits) takeRoom(queue string) map[types.UID]*corev1.Pod {
	pods := w.room.take(queue)
	for uid := range pods {
		delete(w.models, uid)
	}
	return pods
}

// takeModels removes and returns the card pods waiting for room, each
// out of the room of its queue (queueOf).
func (w *waits) takeModels(queueOf func(*corev1.Pod) string) map[types.UID]*corev1.Pod {
	pods := w.models
	for uid, p := range pods {
		w.room.remove(queueOf(p), uid)
	}
	w.models = map[types.UID]*corev1.Pod{}
	return pods
}

// leaveRoom drops a pod placed or gone from the room of queue.
func (w *waits) leaveRoom(queue string, uid types.UID) {
	w.room.remove(queue, uid)
	delete(w.models, uid)
}

// park files a pod turned away while another gang is placed (an elastic
// pod: while gangs wait for their min).
func (w *waits) park(k gang.Key, pod *corev1.Pod, elastic bool) {
	if elastic {
		w.parkedElastic[pod.UID] = pod
		return
	}
	w.parkedGangs.add(k, pod.UID, pod)
}

// parked tells whether a pod of gang k is parked, and whether as elastic.
func (w *waits) parked(k gang.Key, uid types.UID) (parked, elastic bool) {
	if _, ok := w.parkedElastic[uid]; ok {
		return true, true
	}
	return w.parkedGangs.has(k, uid), false
}

// unpark drops a pod of gang k from the parked pods.
func (w *waits) unpark(k gang.Key, uid types.UID) {
	delete(w.parkedElastic, uid)
	w.parkedGangs.remove(k, uid)
}

// takeElastic removes and returns the parked elastic pods.
func (w *waits) takeElastic() map[types.UID]*corev1.Pod {
	pods := w.parkedElastic
	w.parkedElastic = map[types.UID]*corev1.Pod{}
	return pods
}

// takeDeferred removes and returns the pods deferred until the state synced.
func (w *waits) takeDeferred() map[types.UID]*corev1.Pod {
	pods := w.deferred
	w.deferred = map[types.UID]*corev1.Pod{}
	return pods
}

// forget drops a pod of gang k that is gone from every wait but the
// room's and the owner's, which its entry names (leaveRoom; the owner's is
// State.waitForOwnerLocked's).
func (w *waits) forget(k gang.Key, uid types.UID) {
	delete(w.parkedElastic, uid)
	delete(w.deferred, uid)
	delete(w.grouping, uid)
	w.parkedGangs.remove(k, uid)
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
	s.waits.forRoom(pod, queue, usesCards)
}

// roomFreedLocked wakes the pods waiting for room in queue.
func (s *State) roomFreedLocked(queue string) {
	if w := s.waits.takeRoom(queue); len(w) > 0 {
		s.activateLocked(maps.Values(w))
	}
}

// modelsChangedLocked wakes the card pods waiting for room, when a node's
// card models changed.
func (s *State) modelsChangedLocked() {
	if len(s.waits.models) > 0 {
		s.activateLocked(maps.Values(s.waits.takeModels(s.queueOfLocked)))
	}
}

// waitingLocked tells whether a pod waits for room.
func (s *State) waitingLocked(e *podEntry) bool {
	return s.waits.room.has(e.Queue, e.pod.UID)
}

// forgetWaitLocked drops a pod placed or gone from the waits.
func (s *State) forgetWaitLocked(e *podEntry) {
	s.waits.leaveRoom(e.Queue, e.pod.UID)
}

// wakePendingLocked wakes a gang's members not placed: when the gang becomes
// admissible (its PodGroup arrived, it reached minMember pods, a split was
// mended), or a change of its PodGroup may admit it while it is held.
func (s *State) wakePendingLocked(g *gangEntry) {
	s.activateLocked(pending(g))
}
