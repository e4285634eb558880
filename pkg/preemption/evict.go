package preemption

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"cardinal.dev/cardinal/pkg/evict"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/state"
)

// Evictions go the way kube-scheduler's own preemption executor makes
// them, with Cardinal's words: a victim waiting at Permit (or in PreBind)
// is rejected in memory, which releases its whole gang's reservation; any
// other gets the DisruptionTarget condition with reason
// PreemptionByScheduler and is deleted. Cardinal's own wording replaces the
// executor's "higher priority" message, since a reclaim is about shares,
// not priority (SPEC §5.7).

// victim is a pod to evict and why, in words.
type victim struct {
	pod     *corev1.Pod
	node    string
	why     string
	reclaim bool
}

// who names a preemptor in messages: its gang's PodGroup or the pod.
func who(pre state.Preemptor, pod *corev1.Pod) string {
	if pre.Gang != "" {
		return string(pre.Gang)
	}
	return pod.Namespace + "/" + pod.Name
}

// why says why a unit gives way to pre.
func why(pre state.Preemptor, pod *corev1.Pod, u *unit, short []dim) string {
	switch {
	case u.reclaim && len(short) > 0:
		return fmt.Sprintf("reclaimed by %s: queue %s is below its deserved %s", who(pre, pod), pre.Queue, short[0])
	case u.kind == elasticPod:
		return fmt.Sprintf("preempted by %s: its min needs room in queue %s, and elastic pods give way to any gang's min", who(pre, pod), pre.Queue)
	default:
		return fmt.Sprintf("preempted by %s (priority %d): its min needs room in queue %s, and this %s has priority %d", who(pre, pod), pre.Priority, pre.Queue, u.kind, u.priority)
	}
}

// execute evicts the plan's victims, keeps their room for the members and
// nominates the members on it. The state learns of it first, so no second
// round starts for pre while its victims terminate (SPEC §5.8); the API
// calls run in the background, out of the scheduling cycle.
func (p *Plugin) execute(ctx context.Context, pod *corev1.Pod, pre state.Preemptor, res *result, short []dim) *fwk.PostFilterResult {
	logger := klog.FromContext(ctx)
	var victims []victim
	uids := make([]types.UID, 0, len(res.evicted))
	for _, u := range res.evicted {
		text := why(pre, pod, u, short)
		for _, pl := range u.pods {
			victims = append(victims, victim{pod: pl.Pod, node: pl.Node, why: text, reclaim: u.reclaim})
			uids = append(uids, pl.Pod.UID)
		}
	}
	nominated := make(map[*corev1.Pod]string, len(res.members))
	var result *fwk.PostFilterResult
	for _, m := range res.members {
		nominated[m.pod] = m.node
		ni := &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: m.node}
		if m.pod.UID == pod.UID {
			result = &fwk.PostFilterResult{NominatingInfo: ni}
			continue
		}
		p.handle.AddNominatedPod(logger, m.info, ni)
	}
	p.state.Preempted(pre, uids, nominated)
	recordAttempt(len(victims))
	if logger.V(2).Enabled() {
		names := make([]klog.ObjectRef, len(victims))
		for i, v := range victims {
			names[i] = klog.KObj(v.pod)
		}
		logger.V(2).Info("Preempting", "preemptor", who(pre, pod), "members", len(res.members), "victims", names)
	}
	go p.actuate(context.WithoutCancel(ctx), pod, pre, res, victims)
	return result
}

// actuate makes the evictions, the members' nominations and the events.
func (p *Plugin) actuate(ctx context.Context, pod *corev1.Pod, pre state.Preemptor, res *result, victims []victim) {
	logger := klog.FromContext(ctx)
	p.handle.Parallelizer().Until(ctx, len(victims), func(i int) {
		v := victims[i]
		if err := p.evictWithRetries(ctx, v.pod, v.why); err != nil {
			logger.Error(err, "Evicting for a preemptor failed; the room made for it is given up", "victim", klog.KObj(v.pod), "preemptor", who(pre, pod))
			p.state.EvictionFailed(pre.Key, v.pod.UID)
			p.handle.EventRecorder().Eventf(v.pod, pod, corev1.EventTypeWarning, "EvictionFailed", "Preempting",
				"evicting it for %s failed: %v; it keeps running, and %s will try again", who(pre, pod), err, who(pre, pod))
			return
		}
		recordEviction(v.reclaim)
		reason := "Preempted"
		if v.reclaim {
			reason = "Reclaimed"
		}
		p.handle.EventRecorder().Eventf(v.pod, pod, corev1.EventTypeNormal, reason, "Preempting", "%s", v.why)
	}, Name)
	pods := p.handle.SharedInformerFactory().Core().V1().Pods().Lister()
	for _, m := range res.members {
		if m.pod.UID == pod.UID {
			continue
		}
		// A member bound, or gone, by now may not be nominated: the API
		// server refuses a nomination on a bound pod.
		if now, err := pods.Pods(m.pod.Namespace).Get(m.pod.Name); err != nil || now.UID != m.pod.UID || now.Spec.NodeName != "" || now.Status.NominatedNodeName == m.node {
			continue
		}
		status := m.pod.Status.DeepCopy()
		status.NominatedNodeName = m.node
		if err := schedutil.PatchPodStatus(ctx, p.handle.ClientSet(), m.pod.Name, m.pod.Namespace, &m.pod.Status, status); err != nil && !apierrors.IsNotFound(err) {
			logger.V(2).Info("Nominating a member", "pod", klog.KObj(m.pod), "node", m.node, "err", err)
		}
	}
	p.recordEvents(pod, pre, res, victims)
}

// evictWithRetries evicts a victim, trying again with backoff while the API
// calls fail (SPEC §5.8). The error is the last attempt's.
func (p *Plugin) evictWithRetries(ctx context.Context, victim *corev1.Pod, why string) error {
	return evict.WithRetries(ctx, victim, func(ctx context.Context) error { return p.evict(ctx, victim, why) })
}

// evict rejects a victim in memory when it is not bound yet, else marks it
// a disruption target and deletes it.
func (p *Plugin) evict(ctx context.Context, victim *corev1.Pod, why string) error {
	if wp := p.handle.GetWaitingPod(victim.UID); wp != nil && wp.Preempt(Name, why) {
		return nil
	}
	if pb := p.handle.GetPodInPreBind(victim.UID); pb != nil && pb.CancelPod(why) {
		return nil
	}
	return evict.Pod(ctx, p.handle.ClientSet(), victim, why)
}

// recordEvents tells each victim gang's PodGroup what it lost and why, and
// the preemptor (its PodGroup, or the pod) what was evicted for it.
func (p *Plugin) recordEvents(pod *corev1.Pod, pre state.Preemptor, res *result, victims []victim) {
	byGang := map[gang.Key][]victim{}
	for _, v := range victims {
		if k, ok := p.state.GangOf(v.pod); ok {
			byGang[k] = append(byGang[k], v)
		}
	}
	rec := p.handle.EventRecorder()
	for k, vs := range byGang {
		rec.Eventf(p.state.PodGroupRef(k), pod, corev1.EventTypeNormal, "Preempted", "Preempting",
			"%d of its pods evicted (%s): %s", len(vs), names(vs), vs[0].why)
	}
	nodes := map[string]bool{}
	for _, v := range victims {
		nodes[v.node] = true
	}
	note := fmt.Sprintf("evicted %s on %s for its min of %d: %s; its members are nominated there and the room is kept for them",
		count(len(victims), "pod"), count(len(nodes), "node"), len(res.members), names(victims))
	if pre.Gang != "" {
		rec.Eventf(p.state.PodGroupRef(pre.Gang), nil, corev1.EventTypeNormal, "Preempting", "Preempting", "%s", note)
	} else {
		rec.Eventf(pod, nil, corev1.EventTypeNormal, "Preempting", "Preempting", "%s", note)
	}
}

// names lists victims' names, the first few.
func names(vs []victim) string {
	const most = 8
	out := make([]string, 0, min(len(vs), most))
	for _, v := range vs {
		out = append(out, v.pod.Namespace+"/"+v.pod.Name)
	}
	sort.Strings(out)
	if len(out) > most {
		return strings.Join(out[:most], ", ") + fmt.Sprintf(" and %d more", len(out)-most)
	}
	return strings.Join(out, ", ")
}

// count says n things in words: "1 pod", "3 pods".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
