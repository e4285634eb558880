package coscheduling

import (
	"time"

	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
)

// Less orders the scheduling queue: higher priority first; then older gangs
// first (a gang by its PodGroup's creation time, a single pod by its own);
// then by gang, so one gang's pods come out of the queue together; then by
// pod name. Everything it reads is fixed once a pod is queued, so the queue's
// heap stays consistent. A gang's pods sorting together is what keeps a gang
// from being interleaved with others (scheduler-plugins #110).
func (p *Plugin) Less(a, b fwk.QueuedEntityInfo) bool {
	if pa, pb := a.GetPriority(), b.GetPriority(); pa != pb {
		return pa > pb
	}
	ta, ka := p.sortKey(a)
	tb, kb := p.sortKey(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return ka < kb
}

// podEntity is a queued entity that is one pod (kube-scheduler's QueuedPodInfo).
type podEntity interface {
	GetPodInfo() fwk.PodInfo
}

// sortKey is when an entity's gang was created and a key that groups a
// gang's pods and then orders them by name.
func (p *Plugin) sortKey(e fwk.QueuedEntityInfo) (time.Time, string) {
	qp, ok := e.(podEntity)
	if !ok || qp.GetPodInfo() == nil {
		return e.GetTimestamp(), ""
	}
	pod := qp.GetPodInfo().GetPod()
	if k, ok := gang.Of(pod); ok {
		if created, ok := p.mgr.created(k); ok {
			return created, string(k) + "\x00" + pod.Name
		}
	}
	return pod.CreationTimestamp.Time, pod.Namespace + "/" + pod.Name
}
