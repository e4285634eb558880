package inspect

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/refusal"
)

// fix says what would let a waiting pod run, from the refusal the
// scheduler's checks gave (SPEC §4.6: refusals carry their numbers) and
// the plugin that gave it. It is the refusal's own Fix, so it never
// disagrees with the refusal.
func (c *Cluster) fix(pod *corev1.Pod, plugin string, r refusal.Refusal) string {
	if plugin == gatesPlugin {
		return "remove the scheduling gates once what set them is satisfied"
	}
	if r == nil {
		return ""
	}
	if room, ok := r.(refusal.Room); ok {
		return refusal.RoomFix(room, c.elastic(pod))
	}
	return r.Fix()
}

// elastic tells whether pod would be placed beyond its gang's min.
func (c *Cluster) elastic(pod *corev1.Pod) bool {
	k, ok := gang.Of(pod)
	if !ok {
		return false
	}
	g, ok := c.State.GangStatus(k)
	return ok && g.Placed >= g.Min
}

// refusalOf is the refusal a status from plugin carries. kube-scheduler's
// NodeResourcesFit gives its reasons as words only; "Insufficient NAME" is
// the one of them a fix can name a resource from.
func refusalOf(plugin string, st *fwk.Status) refusal.Refusal {
	if r, ok := refusal.As(st); ok {
		return r
	}
	if plugin == names.NodeResourcesFit {
		for _, reason := range st.Reasons() {
			if name, ok := strings.CutPrefix(reason, "Insufficient "); ok {
				return refusal.Insufficient{Resource: name}
			}
		}
	}
	return nil
}

// telling ranks refusals found on different nodes, the one that says
// most about what to change first: the queue's quota, then card models,
// then room kept for a preemptor, then room.
func telling(r refusal.Refusal) int {
	switch r.(type) {
	case refusal.QuotaExceeded:
		return 0
	case refusal.GuaranteeExceeded:
		return 1
	case refusal.NoModelQuota:
		return 2
	case refusal.ModelNotAllowed, refusal.NoModelOnNode:
		return 3
	case refusal.UnlabelledCards:
		return 4
	case refusal.RoomKept:
		return 6
	case refusal.Room:
		return 7
	}
	return 5
}

// runtimeRefusal is the scheduler's own refusal of pod's gang, as the
// PodGroup status writer put it beside the gang's waiting reason, when msg
// (what the scheduler last said of the pod) carries that refusal: what only
// the running scheduler knows (another gang being placed). The counts in
// the two may differ, having been written at different times.
func (c *Cluster) runtimeRefusal(pod *corev1.Pod, msg string) refusal.Refusal {
	pg := c.podGroupOf(pod)
	if pg == nil {
		return nil
	}
	r := waitingRefusal(pg)
	if r == nil || !strings.Contains(msg, refusal.Identity(r)) {
		return nil
	}
	return r
}

// waitingRefusal is the refusal the scheduler wrote on a PodGroup, or nil.
func waitingRefusal(pg *schedv1alpha1.PodGroup) refusal.Refusal {
	enc, ok := pg.Annotations[podgroupstatus.WaitingRefusalAnnotation]
	if !ok {
		return nil
	}
	r, err := refusal.Decode(enc)
	if err != nil {
		return nil
	}
	return r
}

// Names for reasons that come from no plugin.
const (
	gatesPlugin     = "SchedulingGates"
	schedulerPlugin = "scheduler"
)
