package cardquota

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/state"
)

const stateKey fwk.StateKey = "PreFilter" + Name

// stateData is what PreFilter found of a pod that uses cards, and its
// queue's card quota and use as this cycle sees it. AddPod and RemovePod
// adjust a clone during preemption simulation.
type stateData struct {
	queue          string
	nonPreemptible bool
	// requests are the pod's card resources and how many of each it asks for.
	requests cardRequests
	// names are the pod's card-name alternatives, in order; empty = any model.
	names []string
	cards map[string]state.CardUsage
	// waits is set once Filter turned the pod away for its queue's card
	// quota on some node, so it is recorded as waiting for room once per
	// cycle (shared by the cycle's clones).
	waits *atomic.Bool
	// everyNode is set when PreFilter found that every node carrying the
	// pod's card resources passes Filter, so Filter need not check the
	// node's models; adjusted when AddPod or RemovePod changed the numbers
	// since. It holds while the state's nodes are at nodesGen.
	everyNode, adjusted bool
	nodesGen            uint64
	// views are the state's card models of every node at nodesGen, read
	// by Filter while no node has changed since.
	views map[string]cardmodel.Node
	// productLabels, set by PreScore for a pod that asks only for whole
	// cards, are the node labels naming the models of what it asks for.
	productLabels []string
	// narrowedTo is the model PreFilter narrowed the cycle's nodes to, ""
	// when it did not (narrow.go).
	narrowedTo string
}

// Clone copies what AddPod and RemovePod change.
func (s *stateData) Clone() fwk.StateData {
	c := *s
	c.cards = maps.Clone(s.cards)
	return &c
}

// passesEveryNode tells whether Filter would let the pod onto every one
// of the scheduler's nodes that carries the card resources it requests:
// each model some node carries them under is among its alternatives and
// has quota for it, and, when it names models, no node carries them under
// no model and the state has seen as many nodes as the scheduler's
// snapshot holds (a node it has not seen has no model to match). Nodes
// that do not carry them are refused by NodeResourcesFit.
func (p *Plugin) passesEveryNode(s *stateData, snapshotNodes int) bool {
	for _, rq := range s.requests {
		models, unlabelled, known := p.state.ModelsCarrying(rq.resource)
		if len(s.names) > 0 && (unlabelled || known != snapshotNodes) {
			return false
		}
		for _, m := range models {
			if len(s.names) > 0 && s.rank(m) < 0 || s.check(m, rq.n) != nil {
				return false
			}
		}
	}
	return true
}

// cardRequest is how many of one card resource a pod asks for, and the
// reason a node without room for them is refused with, made once a cycle.
type cardRequest struct {
	resource     corev1.ResourceName
	n            int64
	insufficient string
}

// cardRequests are a pod's card requests in resource order: a slice, as
// Filter and Score range over them for every node and a pod asks for one
// or two card resources at most.
type cardRequests []cardRequest

func newCardRequests(m map[corev1.ResourceName]int64) cardRequests {
	out := make(cardRequests, 0, len(m))
	for r, n := range m {
		out = append(out, cardRequest{resource: r, n: n, insufficient: "Insufficient " + string(r)})
	}
	slices.SortFunc(out, func(a, b cardRequest) int { return strings.Compare(string(a.resource), string(b.resource)) })
	return out
}

// of is how many of resource the pod asks for.
func (rs cardRequests) of(resource corev1.ResourceName) int64 {
	for _, r := range rs {
		if r.resource == resource {
			return r.n
		}
	}
	return 0
}

func getState(cs fwk.CycleState) (*stateData, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state: %w", stateKey, err)
	}
	s, ok := d.(*stateData)
	if !ok {
		return nil, fmt.Errorf("%+v cannot be converted to *cardquota.stateData", d)
	}
	return s, nil
}

// rank is the place of model among the pod's alternatives, or -1.
func (s *stateData) rank(model string) int {
	for i, n := range s.names {
		if n == model {
			return i
		}
	}
	return -1
}

// PreFilter skips pods that use no cards. For the others it reads the
// card-name alternatives, refuses alternatives that need different
// resources or a resource the pod does not request (SPEC §4.4), and refuses
// the pod before any node is looked at when none of its alternatives has
// quota left in its queue.
func (p *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if len(cardmodel.CardRequests(pod, p.state.IsCardResource)) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	c := p.state.Candidate(pod)
	names := c.CardNames
	if c.CardNamesErr != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, c.CardNamesErr.Error())
	}
	if len(names) > 0 {
		if err := cardmodel.SameResource(names); err != nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("pod %s/%s: %v", pod.Namespace, pod.Name, err))
		}
		for r := range c.CardRequests {
			if !cardmodel.Matches(names[0], r) {
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
					"pod %s/%s requests %s, which is not what card model %s is used through: request the model's resource or change the card-name annotation",
					pod.Namespace, pod.Name, r, names[0]))
			}
		}
	}
	s := p.newStateData(c)
	s.requests = newCardRequests(c.CardRequests)
	simulating := state.Simulating(cs)
	if !simulating {
		s.waits = &atomic.Bool{} // a preemption plan's refusals wait for nothing
	}
	s.views, s.nodesGen = p.state.NodeViews()
	s.everyNode = !simulating && p.passesEveryNode(s, len(nodes))
	cs.Write(stateKey, s)
	if len(names) == 0 || simulating {
		return nil, nil
	}
	if !s.everyNode {
		if st := s.checkAny(); st != nil {
			p.state.WaitForRoom(pod, c.Queue, true)
			return nil, st
		}
	}
	if p.handle == nil {
		return nil, nil
	}
	return p.narrow(cs, s, pod, c, p.handle.SnapshotSharedLister().NodeInfos(), len(nodes)), nil
}

// checkAny refuses the pod when none of its card-name alternatives has
// quota left for all its cards, with each one's reason.
func (s *stateData) checkAny() *fwk.Status {
	var total int64
	for _, rq := range s.requests {
		total += rq.n
	}
	reasons := make([]string, 0, len(s.names))
	for _, model := range s.names {
		st := s.check(model, total)
		if st == nil {
			return nil
		}
		reasons = append(reasons, st.Message())
	}
	return fwk.NewStatus(fwk.Unschedulable, strings.Join(reasons, "; "))
}

// newStateData is a candidate's card numbers as its queue's quota and use
// stand now. PreFilter adds the requests Filter ranges over; the queueing
// hint's quota check reads the candidate's own.
func (p *Plugin) newStateData(c state.Candidate) *stateData {
	s := &stateData{queue: c.Queue, nonPreemptible: c.NonPreemptible, names: c.CardNames, cards: p.state.Cards(c.Queue)}
	if c.Displaced != nil {
		// The min member this pod pushes out to elastic leaves the
		// non-preemptible use as the pod enters it.
		for m, n := range c.Displaced.Cards {
			u := s.cards[m]
			u.NonPreemptible -= n
			s.cards[m] = u
		}
	}
	return s
}

// check is the quota decision for n cards of model on this cycle's
// (possibly simulated) numbers (SPEC §4.2, §4.6, §3.5).
func (s *stateData) check(model string, n int64) *fwk.Status {
	u := s.cards[model]
	switch {
	case !u.Listed:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"queue %s has no quota for card model %s: add it to the queue's spec.cards, or ask for a model the queue lists", s.queue, model))
	case u.Allocated+n > u.Capability:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"queue %s has insufficient %s quota: requested %d, would use %d, capability %d", s.queue, model, n, u.Allocated+n, u.Capability))
	case s.nonPreemptible && u.NonPreemptible+n > u.Guarantee:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(
			"queue %s: non-preemptible pods may use only its guarantee of %s: requested %d, would use %d, guarantee %d", s.queue, model, n, u.NonPreemptible+n, u.Guarantee))
	}
	return nil
}

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
		st := fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("node %s's card models are not known to Cardinal yet; the pod is tried again when they are", nodeName))
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
			return p.waits(s, pod, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
				"node %s has %s, which is not among the pod's card models %s", nodeName, model, strings.Join(s.names, "|"))))
		}
		if st := s.check(model, rq.n); st != nil {
			return p.waits(s, pod, st)
		}
	}
	if !used && len(s.names) > 0 {
		if len(node.Unlabelled) > 0 {
			return p.waits(s, pod, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
				"node %s's cards have no model (no product label), and the pod asks for %s", nodeName, strings.Join(s.names, "|"))))
		}
		return p.waits(s, pod, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"node %s has none of the pod's card models %s", nodeName, strings.Join(s.names, "|"))))
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
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, rq.insufficient)
		}
		if requested == nil {
			requested = nodeInfo.GetRequested().GetScalarResources()
		}
		if short == nil && rq.n > a-requested[rq.resource] {
			short = &s.requests[i]
		}
	}
	if short != nil {
		return fwk.NewStatus(fwk.Unschedulable, short.insufficient)
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

// PreFilterExtensions keeps the cycle's card numbers right while
// preemption simulates adding and removing pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod charges a simulated pod's cards to the cycle's numbers if it is in the same queue.
func (p *Plugin) AddPod(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, added fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	return p.adjust(cs, added.GetPod(), nodeInfo, 1)
}

// RemovePod gives back a simulated victim's cards if it is in the same queue.
func (p *Plugin) RemovePod(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, removed fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	return p.adjust(cs, removed.GetPod(), nodeInfo, -1)
}

func (p *Plugin) adjust(cs fwk.CycleState, other *corev1.Pod, nodeInfo fwk.NodeInfo, sign int64) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	c, ok := p.state.ChargeOf(other)
	if !ok || c.Queue != s.queue {
		return nil
	}
	cards := c.Cards
	if !c.Placed {
		// A nominated pod, not yet placed: what it would be charged there.
		node, _ := p.state.Node(nodeInfo.Node().Name)
		cards = node.PodCards(other)
	}
	s.adjusted = true
	for model, n := range cards {
		u := s.cards[model]
		u.Allocated += sign * n
		if c.NonPreemptible {
			u.NonPreemptible += sign * n
		}
		s.cards[model] = u
	}
	return nil
}
