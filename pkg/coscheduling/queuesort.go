package coscheduling

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
)

// Less orders the scheduling queue: higher priority first; then older gangs
// first (a gang by its PodGroup's creation time, a single pod by its own,
// and of gangs made in the same second the one admitted first); then by
// gang, so one gang's pods come out of the queue together; then in
// the gang's rank order (pkg/gang), so its min members by rank are tried
// first. Everything it reads is fixed once a pod is queued, so the queue's
// heap stays consistent. A gang's pods sorting together is what keeps a
// gang from being interleaved with others (scheduler-plugins #110). It runs
// under the scheduling queue's lock: it only reads the state.
func (p *Plugin) Less(a, b fwk.QueuedEntityInfo) bool {
	if pa, pb := a.GetPriority(), b.GetPriority(); pa != pb {
		return pa > pb
	}
	ka, kb := p.sortKey(a), p.sortKey(b)
	switch {
	case !ka.created.Equal(kb.created):
		return ka.created.Before(kb.created)
	case ka.kind != kb.kind:
		return ka.kind < kb.kind
	case !ka.admitted.Equal(kb.admitted):
		return ka.admitted.Before(kb.admitted)
	case ka.namespace != kb.namespace:
		return ka.namespace < kb.namespace
	case ka.name != kb.name:
		return ka.name < kb.name
	case ka.kind != gangKind || ka.pod == nil || kb.pod == nil:
		return false
	}
	return gang.Less(ka.pod, kb.pod)
}

// podEntity is a queued entity that is one pod (kube-scheduler's QueuedPodInfo).
type podEntity interface {
	GetPodInfo() fwk.PodInfo
}

// Kinds of queued entities, in the order entities of the same age sort.
const (
	otherKind = iota
	gangKind
	podKind
)

// queueKey is where an entity sorts among those of its priority: when its
// gang was created (a single pod's own creation), then by kind, then by
// the gang's key or the pod's namespace and name, which groups a gang's
// pods. Less builds two for every comparison under the queue's lock, so a
// single pod's takes no allocation.
type queueKey struct {
	created time.Time
	// admitted is when a gang was first admissible: of gangs whose
	// PodGroups were made in the same second, the one admitted first goes
	// first (State.GangAdmitted).
	admitted        time.Time
	kind            int
	namespace, name string
	// pod is a gang's pod, to rank it among its gang's.
	pod *corev1.Pod
}

func (p *Plugin) sortKey(e fwk.QueuedEntityInfo) queueKey {
	qp, ok := e.(podEntity)
	if !ok || qp.GetPodInfo() == nil {
		return queueKey{created: e.GetTimestamp(), kind: otherKind}
	}
	pod := qp.GetPodInfo().GetPod()
	if k, ok := p.state.GangOf(pod); ok {
		if created, ok := p.state.GangCreated(k); ok {
			return queueKey{created: created, admitted: p.state.GangAdmitted(k), kind: gangKind, name: string(k), pod: pod}
		}
	}
	return queueKey{created: pod.CreationTimestamp.Time, kind: podKind, namespace: pod.Namespace, name: pod.Name}
}
