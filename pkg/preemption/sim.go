package preemption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/pkg/state"
)

// The copy of the cluster a plan is made on, and the members it places.

// member is a pod of the preemptor the plan places.
type member struct {
	pod  *corev1.Pod
	info fwk.PodInfo
	// key is the pod's shapeKey; need, the cards it asks for (reach).
	key  string
	need []need
	st   *shape
	node string
}

// need is an amount of a card resource a member asks for.
type need struct {
	resource corev1.ResourceName
	n        int64
}

// reach narrows where a plan looks, from what is known before it starts,
// so that a min that cannot fit is found out without running the Filter
// plugins on every node for it:
//   - skip: the nodes the cycle's pod was refused for a reason no eviction
//     removes (UnschedulableAndUnresolvable: a card model it does not
//     allow, too few cards in all), as upstream's preemption leaves them
//     out; members shaped as that pod (key) are not tried there;
//   - cards: with NodeResourcesFit checking every resource
//     (state.Settings.CardRoomFirst), a node without the cards a member
//     asks for left, or without room for one more pod, is refused by
//     arithmetic before the Filter plugins run. nil: not known to.
//   - leaving: pods whose room is, or is about to be, free
//     (State.Leaving), which the snapshot may still hold on their nodes:
//     a plan leaves them out, or it counts the room of a victim of another
//     preemption both as the victim's and as the nominated member's it is
//     kept for, and evicts a second pod for a one-card preemptor.
type reach struct {
	key     string
	skip    map[string]bool
	cards   func(corev1.ResourceName) bool
	leaving func() []state.Leaving
}

// membersOf reads the preemptor's missing pods once for every placement a
// plan tries: their PodInfos, shape keys and card needs. A pod whose
// PodInfo cannot be made (affinity terms that do not parse) is left out,
// as its PreFilter would refuse it.
func membersOf(pre state.Preemptor, r *reach) []*member {
	out := make([]*member, 0, len(pre.Pods))
	for _, pod := range pre.Pods {
		info, err := framework.NewPodInfo(pod)
		if err != nil {
			continue
		}
		m := &member{pod: pod, info: info, key: shapeKey(pod)}
		if r.cards != nil {
			for name, n := range info.CalculateResource().Resource.GetScalarResources() {
				if n > 0 && r.cards(name) {
					m.need = append(m.need, need{name, n})
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// shape is the cycle state of members alike: it sees every simulated
// addition and removal, so later members see earlier ones placed.
type shape struct {
	cs    fwk.CycleState
	pod   *corev1.Pod
	nodes map[string]bool // nil: any node (PreFilterResult)
	skip  map[string]bool // reach.skip for the cycle pod's shape, else nil
}

// sim is a copy-on-write view of the cluster's nodes for one plan.
type sim struct {
	ctx    context.Context
	h      fwk.Handle
	nodes  map[string]fwk.NodeInfo
	cloned map[string]bool
	shapes []*shape
	reach  *reach
	// victims are the PodInfos of the pods the plan removed, as the
	// snapshot holds them (their requests computed once), to give back.
	victims map[types.UID]fwk.PodInfo
	// charged are the pods left out as leaving that their queues are
	// still charged for: each shape's cycle state gives their charge back,
	// as the preemptors' nominated members they make room for are charged.
	charged []placedInfo
}

// placedInfo is a pod's PodInfo and the node it is on.
type placedInfo struct {
	info fwk.PodInfo
	node string
}

// prefilterer runs the PreFilter plugins for a pod: kube-scheduler's
// framework, which fwk.Handle is, does.
type prefilterer interface {
	RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *corev1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string])
}

func newSim(ctx context.Context, h fwk.Handle, r *reach) (*sim, error) {
	infos, err := h.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, err
	}
	s := &sim{ctx: ctx, h: h, reach: r, nodes: make(map[string]fwk.NodeInfo, len(infos)), cloned: map[string]bool{}, victims: map[types.UID]fwk.PodInfo{}}
	for _, ni := range infos {
		s.nodes[ni.Node().Name] = ni
	}
	if r.leaving == nil {
		return s, nil
	}
	for _, l := range r.leaving() {
		ni := s.nodes[l.Node]
		if ni == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			if pi.GetPod().UID == l.UID {
				// No shape exists yet: shapeOf gives its charge back.
				if err := s.node(l.Node).RemovePod(klog.FromContext(ctx), pi.GetPod()); err != nil {
					return nil, err
				}
				if l.Charged {
					s.charged = append(s.charged, placedInfo{pi, l.Node})
				}
				break
			}
		}
	}
	return s, nil
}

// node returns a node's info to change, copying it the first time.
func (s *sim) node(name string) fwk.NodeInfo {
	ni := s.nodes[name]
	if ni != nil && !s.cloned[name] {
		ni = ni.Snapshot()
		s.nodes[name] = ni
		s.cloned[name] = true
	}
	return ni
}

func (s *sim) add(pi fwk.PodInfo, node string) error {
	ni := s.node(node)
	if ni == nil {
		return fmt.Errorf("node %s is not in the snapshot", node)
	}
	ni.AddPodInfo(pi)
	for _, sh := range s.shapes {
		if st := s.h.RunPreFilterExtensionAddPod(s.ctx, sh.cs, sh.pod, pi, ni); !st.IsSuccess() {
			return st.AsError()
		}
	}
	return nil
}

func (s *sim) remove(pi fwk.PodInfo, node string) error {
	ni := s.node(node)
	if ni == nil {
		return fmt.Errorf("node %s is not in the snapshot", node)
	}
	if err := ni.RemovePod(klog.FromContext(s.ctx), pi.GetPod()); err != nil {
		return err
	}
	for _, sh := range s.shapes {
		if st := s.h.RunPreFilterExtensionRemovePod(s.ctx, sh.cs, sh.pod, pi, ni); !st.IsSuccess() {
			return st.AsError()
		}
	}
	return nil
}

// victim is a pod's PodInfo as the snapshot of its node holds it, so adding
// it back does not compute its requests again; nil if the snapshot does
// not hold it there.
func (s *sim) victim(pod *corev1.Pod, node string) fwk.PodInfo {
	if info := s.victims[pod.UID]; info != nil {
		return info
	}
	if ni := s.nodes[node]; ni != nil {
		for _, info := range ni.GetPods() {
			if info.GetPod().UID == pod.UID {
				s.victims[pod.UID] = info
				return info
			}
		}
	}
	return nil
}

// held keeps the units whose every pod the snapshot holds where the state
// says it is placed. The two are fed by separate informers: a unit the
// snapshot does not see yet, or no longer, is not offered this time.
func (s *sim) held(units []*unit) []*unit {
	isHeld := func(u *unit) bool {
		for _, p := range u.pods {
			if s.victim(p.Pod, p.Node) == nil {
				return false
			}
		}
		return true
	}
	// A gang one of whose elastic pods is not held is not taken: its
	// elastic pods go with it.
	short := map[*unit]bool{}
	out := units[:0:0]
	for _, u := range units {
		if !isHeld(u) {
			short[u] = true
			if u.parent != nil {
				short[u.parent] = true
			}
		}
	}
	for _, u := range units {
		if !short[u] {
			out = append(out, u)
		}
	}
	return out
}

func (s *sim) fits(m *member, node string) bool {
	if m.st.nodes != nil && !m.st.nodes[node] || m.st.skip[node] {
		return false
	}
	ni := s.nodes[node]
	return ni != nil && s.hasRoom(m, ni) && s.h.RunFilterPluginsWithNominatedPods(s.ctx, m.st.cs, m.pod, ni).IsSuccess()
}

// hasRoom is NodeResourcesFit's arithmetic for a member's cards and one
// more pod, when it is known to check them (reach.cards); true otherwise.
// A node without a card resource at all is left to the Filter plugins,
// which may find it served another way.
func (s *sim) hasRoom(m *member, ni fwk.NodeInfo) bool {
	if s.reach.cards == nil {
		return true
	}
	alloc := ni.GetAllocatable()
	if len(ni.GetPods())+1 > alloc.GetAllowedPodNumber() {
		return false
	}
	if len(m.need) == 0 {
		return true
	}
	allocated, requested := alloc.GetScalarResources(), ni.GetRequested().GetScalarResources()
	for _, nd := range m.need {
		if a := allocated[nd.resource]; a > 0 && nd.n > a-requested[nd.resource] {
			return false
		}
	}
	return true
}

// roomFor tells whether want of members can fit with units gone by
// NodeResourcesFit's arithmetic: on each node they may use, what is left
// of the cards they ask for and of pods, plus what the units' pods there
// free; n is how many fit so counted, at most want. It answers only when
// the members are all shaped as the cycle's pod (so alike) and the
// arithmetic is known to be checked (ok); not when a node lacks a card
// resource at all. It reads the snapshot before the units leave it.
func (s *sim) roomFor(want int, members []*member, units []*unit) (n int, ok bool) {
	if s.reach.cards == nil || len(members) == 0 {
		return 0, false
	}
	for _, m := range members {
		if m.key != s.reach.key {
			return 0, false
		}
	}
	type freed struct {
		pods  int
		cards []int64 // by members[0].need
	}
	asks := members[0].need
	byNode := map[string]*freed{}
	for _, u := range units {
		for _, p := range u.pods {
			f := byNode[p.Node]
			if f == nil {
				f = &freed{cards: make([]int64, len(asks))}
				byNode[p.Node] = f
			}
			f.pods++
			res := s.victim(p.Pod, p.Node).CalculateResource().Resource.GetScalarResources()
			for i, nd := range asks {
				f.cards[i] += res[nd.resource]
			}
		}
	}
	none := &freed{cards: make([]int64, len(asks))}
	sh := members[0].st
	unknown := false
nodes:
	for name, ni := range s.nodes {
		if sh.nodes != nil && !sh.nodes[name] || sh.skip[name] {
			continue
		}
		f := byNode[name]
		if f == nil {
			f = none
		}
		alloc := ni.GetAllocatable()
		fit := int64(alloc.GetAllowedPodNumber() - len(ni.GetPods()) + f.pods)
		allocated, requested := alloc.GetScalarResources(), ni.GetRequested().GetScalarResources()
		for i, nd := range asks {
			a := allocated[nd.resource]
			if a <= 0 {
				unknown = true
				continue nodes
			}
			fit = min(fit, (a-requested[nd.resource]+f.cards[i])/nd.n)
		}
		if n += int(max(fit, 0)); n >= want {
			return want, true
		}
	}
	return n, !unknown
}

// shapeOf runs the PreFilter plugins once per kind of member (pods of a
// gang are usually alike), on a cycle state marked as a simulation.
func (s *sim) shapeOf(pod *corev1.Pod, key string, byKey map[string]*shape) (*shape, error) {
	if sh := byKey[key]; sh != nil {
		return sh, nil
	}
	pf, ok := s.h.(prefilterer)
	if !ok {
		return nil, fmt.Errorf("the scheduler framework cannot run PreFilter for a plan")
	}
	cs := framework.NewCycleState()
	state.MarkSimulation(cs)
	res, st, _ := pf.RunPreFilterPlugins(s.ctx, cs, pod)
	if !st.IsSuccess() {
		return nil, fmt.Errorf("pod %s cannot be placed whatever is evicted: %s", pod.Name, st.Message())
	}
	for _, c := range s.charged {
		if st := s.h.RunPreFilterExtensionRemovePod(s.ctx, cs, pod, c.info, s.nodes[c.node]); !st.IsSuccess() {
			return nil, st.AsError()
		}
	}
	sh := &shape{cs: cs, pod: pod}
	if key == s.reach.key {
		sh.skip = s.reach.skip
	}
	if !res.AllNodes() {
		sh.nodes = map[string]bool{}
		for n := range res.NodeNames {
			sh.nodes[n] = true
		}
	}
	byKey[key] = sh
	s.shapes = append(s.shapes, sh)
	return sh, nil
}

// shapeKey tells pods apart by what scheduling reads of them: requests,
// placement constraints and Cardinal's labels and annotations.
func shapeKey(pod *corev1.Pod) string {
	spec := pod.Spec.DeepCopy()
	spec.NodeName, spec.Hostname, spec.Subdomain = "", "", ""
	for i := range spec.Containers {
		spec.Containers[i].Env, spec.Containers[i].Args, spec.Containers[i].Command = nil, nil, nil
	}
	return fmt.Sprintf("%v|%v|%v|%v", spec.String(), pod.Labels, pod.Annotations, pod.Namespace)
}

// giveBack puts units' pods back and checks that the members affected
// still fit where they were placed; if not, it takes the pods out again.
func (s *sim) giveBack(units []*unit, affected []*member) (bool, error) {
	var back []struct {
		info fwk.PodInfo
		node string
	}
	for _, u := range units {
		for _, p := range u.pods {
			info := s.victim(p.Pod, p.Node)
			if err := s.add(info, p.Node); err != nil {
				return false, err
			}
			back = append(back, struct {
				info fwk.PodInfo
				node string
			}{info, p.Node})
		}
	}
	ok, err := s.stillFit(affected)
	if err != nil || ok {
		return ok, err
	}
	for _, b := range back {
		if err := s.remove(b.info, b.node); err != nil {
			return false, err
		}
	}
	return false, nil
}

// stillFit checks members where they were placed, each with the members
// before it in place, as they were placed; all are in place afterwards.
func (s *sim) stillFit(members []*member) (bool, error) {
	for _, m := range members {
		if err := s.remove(m.info, m.node); err != nil {
			return false, err
		}
	}
	ok := true
	for _, m := range members {
		if ok && !s.fits(m, m.node) {
			ok = false
		}
		if err := s.add(m.info, m.node); err != nil {
			return false, err
		}
	}
	return ok, nil
}
