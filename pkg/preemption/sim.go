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
	st   *shape
	node string
}

// shape is the cycle state of members alike: it sees every simulated
// addition and removal, so later members see earlier ones placed.
type shape struct {
	cs    fwk.CycleState
	pod   *corev1.Pod
	nodes map[string]bool // nil: any node (PreFilterResult)
}

// sim is a copy-on-write view of the cluster's nodes for one plan.
type sim struct {
	ctx    context.Context
	h      fwk.Handle
	nodes  map[string]fwk.NodeInfo
	cloned map[string]bool
	shapes []*shape
	// victims are the PodInfos of the pods the plan removed, as the
	// snapshot holds them (their requests computed once), to give back.
	victims map[types.UID]fwk.PodInfo
}

// prefilterer runs the PreFilter plugins for a pod: kube-scheduler's
// framework, which fwk.Handle is, does.
type prefilterer interface {
	RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *corev1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string])
}

func newSim(ctx context.Context, h fwk.Handle) (*sim, error) {
	infos, err := h.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, err
	}
	s := &sim{ctx: ctx, h: h, nodes: make(map[string]fwk.NodeInfo, len(infos)), cloned: map[string]bool{}, victims: map[types.UID]fwk.PodInfo{}}
	for _, ni := range infos {
		s.nodes[ni.Node().Name] = ni
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
	if m.st.nodes != nil && !m.st.nodes[node] {
		return false
	}
	ni := s.nodes[node]
	return ni != nil && s.h.RunFilterPluginsWithNominatedPods(s.ctx, m.st.cs, m.pod, ni).IsSuccess()
}

// shapeOf runs the PreFilter plugins once per kind of member (pods of a
// gang are usually alike), on a cycle state marked as a simulation.
func (s *sim) shapeOf(pod *corev1.Pod, byKey map[string]*shape) (*shape, error) {
	key := shapeKey(pod)
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
	sh := &shape{cs: cs, pod: pod}
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
