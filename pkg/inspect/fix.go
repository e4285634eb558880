package inspect

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"cardinal.dev/cardinal/pkg/gang"
)

// The scheduler's refusals name their numbers (SPEC §4.6); what would let
// a pod run is read off them, so it never disagrees with the refusal.
var (
	insufficient  = regexp.MustCompile(`queue (\S+) has insufficient (\S+) quota: requested (\S+), would use (\S+), capability (\S+)`)
	guaranteeOnly = regexp.MustCompile(`queue (\S+): non-preemptible pods may use only its guarantee of (\S+): requested (\S+), would use (\S+), guarantee (\S+)`)
	heldGuarantee = regexp.MustCompile(`queue (\S+) guarantees (\S+) (\S+) and non-preemptible pods would use (\S+)`)
	noModelQuota  = regexp.MustCompile(`queue (\S+) has no quota for card model (\S+):`)
	incomplete    = regexp.MustCompile(`has (\d+) of its minMember (\d+) pods; waiting for (\d+) more`)
	beingPlaced   = regexp.MustCompile(`waiting for gang (\S+), which is being placed`)
	elasticWaits  = regexp.MustCompile(`elastic pods wait while gang (\S+) still needs`)
	backingOff    = regexp.MustCompile(`is backing off until (\S+) after`)
	noQueue       = regexp.MustCompile(`[Qq]ueue "?([^"\s]+)"? (does not exist|not found)`)
	noModelNode   = regexp.MustCompile(`has none of the pod's card models (\S+)|not among the pod's card models (\S+)`)
	unlabelled    = regexp.MustCompile(`cards have no model \(no product label\)`)
	keptRoom      = regexp.MustCompile(`is kept for a gang that preempted for it`)
	splitQueues   = regexp.MustCompile(`gang (\S+)'s pods resolve to different queues`)
	splitSched    = regexp.MustCompile(`gang (\S+) has pods that name another scheduler`)
	mixedKinds    = regexp.MustCompile(`need different resources`)
	insufficientR = regexp.MustCompile(`Insufficient (\S+)`)
)

// fix says what would let a waiting pod run, from the refusal the
// scheduler's checks gave (reason) and the plugin that gave it.
func (c *Cluster) fix(pod *corev1.Pod, plugin, reason string) string {
	if m := insufficient.FindStringSubmatch(reason); m != nil {
		q, r, requested, use, capability := m[1], m[2], m[3], m[4], strings.TrimRight(m[5], ".,;")
		if exceeds(requested, capability) {
			return fmt.Sprintf("it alone asks for %s %s, more than queue %s's capability of %s: raise the capability to at least %s, or ask for less (a lower minMember, smaller pods)", requested, r, q, capability, use)
		}
		more := difference(use, capability)
		return fmt.Sprintf("queue %s needs %s more %s: raise its capability for %s to %s, or end work in queue %s that uses it (kubectl cardinal queues shows its use)", q, more, r, r, use, q)
	}
	if m := guaranteeOnly.FindStringSubmatch(reason); m != nil {
		q, r, use := m[1], m[2], m[4]
		return fmt.Sprintf("raise queue %s's guarantee of %s to %s, or make the workload preemptible (label %s)", q, r, use, "cardinal.dev/preemptibility")
	}
	if m := heldGuarantee.FindStringSubmatch(reason); m != nil {
		q, r, use := m[1], m[2], m[4]
		return fmt.Sprintf("raise queue %s's guarantee of %s to %s, or make the workload preemptible (label %s)", q, r, use, "cardinal.dev/preemptibility")
	}
	if m := noModelQuota.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("add %s to queue %s's spec.cards, or ask for a model the queue lists (annotation cardinal.dev/card-name)", m[2], m[1])
	}
	if m := incomplete.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("create %s more pods of the gang, or lower its minMember", m[3])
	}
	if m := beingPlaced.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("nothing: it is tried as soon as gang %s is placed or gives up (gangs are placed one at a time, so none deadlocks)", m[1])
	}
	if m := elasticWaits.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("nothing: elastic pods are placed once gang %s has its min, on room nobody's min needs", m[1])
	}
	if m := backingOff.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("nothing: it is tried again at %s", m[1])
	}
	if m := noQueue.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("create the Queue %s, or set the label cardinal.dev/queue to a queue that exists", m[1])
	}
	if m := noModelNode.FindStringSubmatch(reason); m != nil {
		models := m[1] + m[2]
		return fmt.Sprintf("add nodes with card model %s, or allow other models in the pod's cardinal.dev/card-name annotation", strings.TrimRight(models, ".,;"))
	}
	if unlabelled.MatchString(reason) {
		return "label the nodes' GPUs with their product (GPU feature discovery sets nvidia.com/gpu.product), or drop the pod's card-name annotation"
	}
	if m := splitQueues.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("label PodGroup %s with cardinal.dev/queue, or give all its pods the same queue", m[1])
	}
	if m := splitSched.FindStringSubmatch(reason); m != nil {
		return fmt.Sprintf("set schedulerName: %s on every pod of gang %s", c.Settings.SchedulerName, m[1])
	}
	if mixedKinds.MatchString(reason) {
		return "in the cardinal.dev/card-name annotation, list only models used through one resource (all whole cards, or all the same MIG or MPS slice)"
	}
	if keptRoom.MatchString(reason) {
		return "nothing: the room is kept for a gang whose victims are terminating; the pod is tried on it once that gang is placed"
	}
	if plugin == gatesPlugin {
		return "remove the scheduling gates once what set them is satisfied"
	}
	if m := insufficientR.FindStringSubmatch(reason); m != nil || strings.Contains(reason, "does not fit") {
		what := "free room"
		if m != nil {
			what = "free " + strings.TrimRight(m[1], ".,;")
		}
		if k, ok := gang.Of(pod); ok {
			if g, ok := c.State.GangStatus(k); ok && g.Placed >= g.Min {
				return fmt.Sprintf("%s on nodes: elastic pods never preempt, they wait for running pods to end or nodes to be added", what)
			}
		}
		return fmt.Sprintf("%s on nodes: running pods ending, nodes added, or preemption when its queue is below its deserved share (pods that are non-preemptible are never evicted)", what)
	}
	return ""
}

// exceeds: a > b, for two quantities as the refusals print them.
func exceeds(a, b string) bool {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	return err1 == nil && err2 == nil && qa.Cmp(qb) > 0
}

// difference is a - b for two quantities as the refusals print them.
func difference(a, b string) string {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("%s - %s", a, b)
	}
	qa.Sub(qb)
	return qa.String()
}

// Names for reasons that come from no plugin.
const (
	gatesPlugin     = "SchedulingGates"
	schedulerPlugin = "scheduler"
)
