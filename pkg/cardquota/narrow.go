package cardquota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
)

// narrow returns the nodes a pod with card-name alternatives is tried on
// in this cycle: those of its first alternative that has quota left in its
// queue and a node that looks to have room for the pod, with room as far
// as a look at each node's free resources, taints and the pod's required
// node affinity can tell. That is where Score would send it (SPEC §4.3),
// and kube-scheduler then filters and scores only those nodes, not a share
// of the whole cluster. Filter still decides on each; if none fits, the
// first Cardinal PostFilter ends the cycle, without preemption or a gang's
// failure, and the pod is tried on every node next (pkg/state narrow.go).
// nil: every node, as for a pod that names no model, asks for more than
// one card resource, was nominated by preemption, is bound (an in-place
// resize), or missed before (it, or its gang while waiting for its min),
// when an earlier PreFilter refused the pod, and when those nodes are all
// there are.
func (p *Plugin) narrow(cs fwk.CycleState, s *stateData, pod *corev1.Pod, c state.PodView, infos fwk.NodeInfoLister, all int) *fwk.PreFilterResult {
	if len(s.names) == 0 || len(s.requests) != 1 || c.NarrowMissed || pod.Status.NominatedNodeName != "" || pod.Spec.NodeName != "" ||
		state.RefusedAtPreFilter(cs) {
		return nil
	}
	rq := s.requests[0]
	if rq.n <= 0 {
		return nil
	}
	f := newFit(pod, rq, p.state.PreemptorKeyOf(pod), s.queue)
	for _, model := range s.names {
		if s.check(model, rq.n) != nil {
			continue
		}
		var names sets.Set[string]
		of := p.state.NodesOf(rq.resource, model)
		for _, name := range of {
			ni, err := infos.Get(name)
			if err != nil || !f.fits(ni, p.state.ClaimsOn(name)) {
				continue
			}
			if names == nil {
				names = make(sets.Set[string], len(of))
			}
			names.Insert(name)
		}
		if len(names) == all {
			return nil // every node: nothing to narrow
		}
		if len(names) > 0 {
			s.narrowedTo = model
			state.MarkNarrowed(cs, model, len(names))
			return &fwk.PreFilterResult{NodeNames: names}
		}
	}
	return nil
}

// fit is what narrow checks a node for, on numbers read once per cycle:
// room for the pod's cards, cpu, memory and one more pod (part of what
// NodeResourcesFit checks), less what preemption keeps there for others
// (CardinalQueue's Filter); the node's taints and cordon (TaintToleration,
// NodeUnschedulable); the pod's required node affinity (NodeAffinity).
type fit struct {
	pod          *corev1.Pod
	own          string // the key the pod's own claims are kept under
	queue        string // the queue the pod was checked in
	card         cardRequest
	cpu, memory  int64
	affinity     nodeaffinity.RequiredNodeAffinity
	compareTaint bool
}

func newFit(pod *corev1.Pod, card cardRequest, own, queue string) *fit {
	req := quota.PodRequests(pod)
	return &fit{
		pod: pod, card: card, own: own, queue: queue,
		cpu: req[corev1.ResourceCPU], memory: req[corev1.ResourceMemory],
		affinity:     nodeaffinity.GetRequiredNodeAffinity(pod),
		compareTaint: utilfeature.DefaultFeatureGate.Enabled(features.TaintTolerationComparisonOperators),
	}
}

// unschedulable is the taint a cordoned node is treated as having.
var unschedulable = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// fits tells whether the pod looks to fit on the node, claims being the
// room kept there for preemptors.
func (f *fit) fits(ni fwk.NodeInfo, claims []state.Claim) bool {
	node := ni.Node()
	if node == nil {
		return false
	}
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	var kept quota.Resources
	if len(claims) > 0 {
		kept = state.KeptFrom(f.own, f.queue, ni, claims)
	}
	// As NodeResourcesFit, a resource the pod does not ask for is not
	// checked, even on a node whose use exceeds what it has.
	short := func(want, free int64, r corev1.ResourceName) bool { return want > 0 && want > free-kept[r] }
	if short(f.card.n, alloc.GetScalarResources()[f.card.resource]-used.GetScalarResources()[f.card.resource], f.card.resource) ||
		short(f.cpu, alloc.GetMilliCPU()-used.GetMilliCPU(), corev1.ResourceCPU) ||
		short(f.memory, alloc.GetMemory()-used.GetMemory(), corev1.ResourceMemory) ||
		len(ni.GetPods()) >= alloc.GetAllowedPodNumber() {
		return false
	}
	logger := klog.Background()
	if node.Spec.Unschedulable && !v1helper.TolerationsTolerateTaint(logger, f.pod.Spec.Tolerations, &unschedulable, f.compareTaint) {
		return false
	}
	if len(node.Spec.Taints) > 0 {
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, f.pod.Spec.Tolerations, noSchedule, f.compareTaint); untolerated {
			return false
		}
	}
	ok, err := f.affinity.Match(node)
	return ok && err == nil
}

// noSchedule keeps the taints that keep pods off a node.
func noSchedule(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// PostFilter ends a cycle that PreFilter narrowed and that found no node,
// before preemption or a gang's failure: the pod is woken to be tried on
// every node (pkg/state narrow.go). Other failures are left to the
// PostFilters after it.
func (p *Plugin) PostFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if st := p.state.AfterNarrowingMiss(cs, pod, statuses); st != nil {
		return nil, st // only part of the nodes were tried
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}
