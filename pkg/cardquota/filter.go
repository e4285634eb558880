package cardquota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/refusal"
)

// Filter lets the pod onto a node only if the node's model for each card
// resource the pod requests is among its alternatives and its queue has
// quota left for it. A node whose GPUs have no model serves only pods that
// name none: they are charged the plain resource (SPEC §1.4). Filter reads
// the node's models as detected when the node last changed, and no shared
// state besides; a node the state has not seen yet is refused until it has.
//
// It also refuses a node without room for the pod's cards, as
// NodeResourcesFit would: the configuration runs this Filter first, and a
// node full of cards is then turned away without NodeResourcesFit's
// costlier look at every resource. Pods that prefer one model fill that
// model's nodes first, so most nodes a cycle looks at can be full.
func (p *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	nodeName := nodeInfo.Node().Name
	node, known := p.nodeOf(s, nodeName)
	alloc := nodeInfo.GetAllocatable().GetScalarResources()
	if unseen := unseenCards(s, node, known, nodeInfo.Node(), alloc); len(unseen) > 0 {
		// kube-scheduler's snapshot is ahead of the state's informer: the
		// node, or its cards, are not known here yet, and so neither is
		// what the pod would be charged. Let the pod onto it once they are.
		st := refusal.Status(fwk.Unschedulable, refusal.ModelsUnknown{Node: nodeName})
		if s.waits == nil || pod == nil || s.waits.Load() {
			return st // simulated, or already registered to wake this cycle
		}
		if !p.state.WaitForNode(pod, s.queue, nodeName, unseen) {
			s.waits.Store(true)
			return st
		}
		if node, known = p.state.Node(nodeName); !known {
			return st
		}
	} else if !known {
		return p.room(s, pod, nodeInfo, alloc) // it has none of the pod's cards: NodeResourcesFit refuses it
	} else if s.everyNode && !s.adjusted && p.state.NodesGeneration() == s.nodesGen {
		return p.room(s, pod, nodeInfo, alloc)
	}
	// The model a request is checked as is the one it is charged as: read
	// off the node's labels (SPEC §4.1), for the card resources the node
	// has (NodeResourcesFit refuses it the others).
	used := false
	for _, rq := range s.requests {
		model := node.ModelOf(rq.resource)
		if rq.n == 0 || model == "" || alloc[rq.resource] == 0 {
			continue
		}
		used = true
		if len(s.names) > 0 && s.rank(model) < 0 {
			return p.waits(s, pod, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.ModelNotAllowed{Node: nodeName, Model: model, Models: s.names}))
		}
		if st := s.check(model, rq.n); st != nil {
			return p.waits(s, pod, st)
		}
	}
	if !used && len(s.names) > 0 {
		if len(node.Unlabelled) > 0 {
			return p.waits(s, pod, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.UnlabelledCards{Node: nodeName, Models: s.names}))
		}
		return p.waits(s, pod, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.NoModelOnNode{Node: nodeName, Models: s.names}))
	}
	return p.room(s, pod, nodeInfo, alloc)
}

// nodeOf is the state's view of a node's card models: the cycle's, while
// no node has changed since PreFilter, else the state's latest.
func (p *Plugin) nodeOf(s *stateData, name string) (cardmodel.Node, bool) {
	if s.views != nil && p.state.NodesGeneration() == s.nodesGen {
		n, ok := s.views[name]
		return n, ok
	}
	return p.state.Node(name)
}

// unseenCards are the card resources the pod requests that the node has
// as cards in kube-scheduler's snapshot but not in the state's view of it
// (all of them when it has not seen the node). It reads one label of the
// snapshot's node at most, never detects its models.
func unseenCards(s *stateData, node cardmodel.Node, known bool, snapshot *corev1.Node, alloc map[corev1.ResourceName]int64) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, rq := range s.requests {
		if rq.n == 0 || alloc[rq.resource] == 0 || known && node.Carries(rq.resource) {
			continue
		}
		if cardmodel.Carried(snapshot, rq.resource) {
			out = append(out, rq.resource)
		}
	}
	return out
}

// room refuses a node that has some of a card resource the pod requests
// but not enough left, with NodeResourcesFit's reason and code: a node that
// has fewer in all than the pod asks for is no use even to preemption. A
// node without the resource at all is left to NodeResourcesFit, which may
// find it served another way (dynamic resource allocation); so is a pod
// already bound (in-place resize), and a request of 0.
func (p *Plugin) room(s *stateData, pod *corev1.Pod, nodeInfo fwk.NodeInfo, allocatable map[corev1.ResourceName]int64) *fwk.Status {
	if !p.roomFirst || pod != nil && pod.Spec.NodeName != "" {
		return nil
	}
	var requested map[corev1.ResourceName]int64
	var short *cardRequest
	for i, rq := range s.requests {
		a := allocatable[rq.resource]
		if rq.n <= 0 || a <= 0 {
			continue
		}
		if rq.n > a {
			// As NodeResourcesFit: one resource no preemption can free is
			// what the node is refused for.
			return refusal.Status(fwk.UnschedulableAndUnresolvable, rq.insufficient)
		}
		if requested == nil {
			requested = nodeInfo.GetRequested().GetScalarResources()
		}
		if short == nil && rq.n > a-requested[rq.resource] {
			short = &s.requests[i]
		}
	}
	if short != nil {
		return refusal.Status(fwk.Unschedulable, short.insufficient)
	}
	return nil
}

// waits records, once per cycle, that Filter turned the pod away for its
// card quota or card models: the state wakes it when its queue has room
// again or a node's card models change (pkg/state waits.go), even if a
// queueing hint fired before the state had that change.
func (p *Plugin) waits(s *stateData, pod *corev1.Pod, st *fwk.Status) *fwk.Status {
	if s.waits != nil && pod != nil && s.waits.CompareAndSwap(false, true) {
		p.state.WaitForRoom(pod, s.queue, true)
	}
	return st
}
