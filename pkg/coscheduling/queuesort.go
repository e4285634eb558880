package coscheduling

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
)

// Less orders the scheduling queue: higher priority first; then older gangs
// first (a gang by its PodGroup's creation time, a single pod by its own);
// then by gang, so one gang's pods come out of the queue together; then in
// the gang's rank order (pkg/gang), so its min members by rank are tried
// first. Everything it reads is fixed once a pod is queued, so the queue's
// heap stays consistent. A gang's pods sorting together is what keeps a
// gang from being interleaved with others (scheduler-plugins #110). It runs
// under the scheduling queue's lock: it only reads the state.
func (p *Plugin) Less(a, b fwk.QueuedEntityInfo) bool {
	if pa, pb := a.GetPriority(), b.GetPriority(); pa != pb {
		return pa > pb
	}
	ta, ka, poda := p.sortKey(a)
	tb, kb, podb := p.sortKey(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ka != kb || poda == nil || podb == nil {
		return ka < kb
	}
	return gang.Less(poda, podb)
}

// podEntity is a queued entity that is one pod (kube-scheduler's QueuedPodInfo).
type podEntity interface {
	GetPodInfo() fwk.PodInfo
}

// sortKey is when an entity's gang was created, a key that groups a gang's
// pods (a single pod's own name), and the pod, to rank a gang's pods.
func (p *Plugin) sortKey(e fwk.QueuedEntityInfo) (time.Time, string, *corev1.Pod) {
	qp, ok := e.(podEntity)
	if !ok || qp.GetPodInfo() == nil {
		return e.GetTimestamp(), "", nil
	}
	pod := qp.GetPodInfo().GetPod()
	if k, ok := gang.Of(pod); ok {
		if created, ok := p.state.GangCreated(k); ok {
			return created, "g\x00" + string(k), pod
		}
	}
	return pod.CreationTimestamp.Time, "p\x00" + pod.Namespace + "/" + pod.Name, nil
}
