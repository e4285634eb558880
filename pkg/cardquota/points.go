package cardquota

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/refusal"
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
	insufficient refusal.Refusal
}

// cardRequests are a pod's card requests in resource order: a slice, as
// Filter and Score range over them for every node and a pod asks for one
// or two card resources at most.
type cardRequests []cardRequest

func newCardRequests(m map[corev1.ResourceName]int64) cardRequests {
	out := make(cardRequests, 0, len(m))
	for r, n := range m {
		out = append(out, cardRequest{resource: r, n: n, insufficient: refusal.Insufficient{Resource: string(r)}})
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
	c := p.state.Prospect(pod)
	names := c.CardNames
	if c.CardNamesErr != nil {
		return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, c.CardNamesErr)
	}
	if len(names) > 0 {
		var mixed refusal.MixedResources
		if errors.As(cardmodel.SameResource(names), &mixed) {
			mixed.Pod = pod.Namespace + "/" + pod.Name
			return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, mixed)
		}
		for r := range c.CardRequests {
			if !cardmodel.Matches(names[0], r) {
				return nil, refusal.Status(fwk.UnschedulableAndUnresolvable, refusal.WrongResource{
					Pod: pod.Namespace + "/" + pod.Name, Resource: string(r), Model: names[0]})
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
	each := make([]refusal.Refusal, 0, len(s.names))
	for _, model := range s.names {
		r := s.refusal(model, total)
		if r == nil {
			return nil
		}
		each = append(each, r)
	}
	return refusal.Status(fwk.Unschedulable, refusal.NoAlternative{Each: each})
}

// newStateData is a prospect's card numbers as its queue's quota and use
// stand now. PreFilter adds the requests Filter ranges over; the queueing
// hint's quota check reads the prospect's own.
func (p *Plugin) newStateData(c state.PodView) *stateData {
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
	if r := s.refusal(model, n); r != nil {
		return refusal.Status(fwk.Unschedulable, r)
	}
	return nil
}

// refusal is why n cards of model do not fit the queue's card quota, or nil.
func (s *stateData) refusal(model string, n int64) refusal.Refusal {
	u := s.cards[model]
	switch {
	case !u.Listed:
		return refusal.NoModelQuota{Queue: s.queue, Model: model}
	case u.Allocated+n > u.Capability:
		return refusal.QuotaExceeded{Queue: s.queue, Resource: model, Requested: n, WouldUse: u.Allocated + n, Capability: u.Capability}
	case s.nonPreemptible && u.NonPreemptible+n > u.Guarantee:
		return refusal.GuaranteeExceeded{Queue: s.queue, Resource: model, Requested: n, WouldUse: u.NonPreemptible + n, Guarantee: u.Guarantee}
	}
	return nil
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
	if !c.Placed() {
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
