// Package preemption is Cardinal's preemption and reclaim, CardinalPreemption
// (SPEC §5): a PostFilter that makes room for a starving gang's whole
// missing min at once, across nodes, and knows elastic pods,
// preemptibility (set apart from priority), queues and card models.
//
// Who may be evicted (policy.go): never non-preemptible pods, nor a
// semi-preemptible gang's min members; in the preemptor's queue, elastic
// pods of any priority and lower-priority preemptible work; from queues
// above their deserved share, while the preemptor's queue is below its own
// (guard.go), their elastic pods and, where they are reclaimable, their
// other work. Victims go elastic pods first (newest first), then pods
// without a gang, then whole gangs, lower priority first, smaller first;
// a gang is never left running below its min.
//
// How (plan.go): every eligible victim is removed from a copy of the
// cluster, the missing min is placed through the framework's Filter
// plugins, and victims are given back most important first while it still
// fits; nothing is evicted when it does not fit, or when a reclaim would
// take the reclaiming queue above its share or a victim queue below its
// own. Shares are judged as they will be once the preemptions under way
// are done (State.Usages), so gangs reclaiming together stop at their
// queue's share. Evictions (evict.go) set DisruptionTarget and say why; the members
// are nominated where the room was made, the room is kept for them, and no
// second round starts while the victims terminate.
//
// It runs only in PostFilter, so pods that need no preemption pay nothing.
// A gang gives back what it holds (CardinalGang) only after preemption
// could not make room for it, in whichever order the profile lists them.
package preemption

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	schedulernames "k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/pkg/state"
)

// Name is the plugin's name in the registry and in scheduler configurations.
const Name = "CardinalPreemption"

// Plugin is the CardinalPreemption scheduler plugin.
type Plugin struct {
	handle fwk.Handle
	state  *state.State
}

var _ fwk.PostFilterPlugin = &Plugin{}

// NewFactory returns the plugin's factory over the scheduling state st.
// Its preemptibleBelowPriority is one of the settings every plugin shares
// (pkg/settings): the state classifies pods by it whichever plugins are
// enabled.
func NewFactory(st *state.State) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, st)
	}
}

// New checks and validates the plugin's args, then attaches the state to
// the scheduler (once, whichever Cardinal plugin comes first).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, st *state.State) (fwk.Plugin, error) {
	args, ok := obj.(*config.CardinalPreemptionArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CardinalPreemptionArgs, got %T", obj)
	}
	if err := validation.ValidateCardinalPreemptionArgs(field.NewPath("pluginConfig").Key(Name).Child("args"), args); err != nil {
		return nil, err
	}
	if err := st.Attach(ctx, h); err != nil {
		return nil, err
	}
	st.EnablePreemption()
	registerMetrics()
	return &Plugin{handle: h, state: st}, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// PostFilter makes room for pod's gang's missing min (or for pod, without a
// gang) by evicting what it may, or says why it does not. A gang whose
// victims are still terminating waits for them (the chain ends, so its
// gang is not failed meanwhile); any other refusal lets CardinalGang's
// PostFilter run next.
func (p *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if st := p.state.AfterNarrowingMiss(cs, pod, statuses); st != nil {
		return nil, st // only part of the nodes were tried
	}
	state.MarkPreemptionTried(cs)
	pre, reason, waiting := p.state.PreemptorOf(pod)
	if waiting {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for room made for it: "+reason)
	}
	if reason != "" {
		attempts.WithLabelValues("not-eligible").Inc()
		return unnominated, p.giveUp(cs, "no preemption: "+reason)
	}
	if wait := p.terminatingFor(pre); wait != "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for room made for it: "+wait)
	}
	start := time.Now()
	res, st := p.preempt(ctx, pod, pre, statuses)
	attemptDuration.Observe(time.Since(start).Seconds())
	if !st.IsSuccess() && st.Code() != fwk.Error {
		return unnominated, p.giveUp(cs, st.Message())
	}
	return res, st
}

// unnominated clears a pod's nominated node when no room is made for it,
// so kube-scheduler does not keep room for it there any more.
var unnominated = &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride}}

// terminatingFor says which pods evicted by the scheduler still terminate
// on a node where a member of pre is nominated, "" if none. The state
// knows its own evictions (PreemptorOf waits for them); this covers those
// it no longer remembers, after a restart or once room stopped being kept,
// so no second round starts while they terminate (SPEC §5.8), but no
// longer than the state waits for its own (state.WaitedFor). It costs the
// pods of the members' nominated nodes.
func (p *Plugin) terminatingFor(pre state.Preemptor) string {
	nodes := p.handle.SnapshotSharedLister().NodeInfos()
	for _, m := range pre.Pods {
		name := m.Status.NominatedNodeName
		if name == "" {
			continue
		}
		ni, err := nodes.Get(name)
		if err != nil {
			continue
		}
		n := 0
		for _, info := range ni.GetPods() {
			if pod := info.GetPod(); state.EvictedByScheduler(pod) && p.state.WaitedFor(pod) {
				n++
			}
		}
		if n > 0 {
			return fmt.Sprintf("%s evicted on node %s, where %s/%s is nominated, still terminating", count(n, "pod"), name, m.Namespace, m.Name)
		}
	}
	return ""
}

// reachOf is what the cycle tells a plan about where to look (reach): the
// nodes Filter refused pod for good, read from a reader that says Filter
// ran on some node (a PreFilter's refusal leaves every node with its
// status: every node is tried then). A pod affinity unmet is not for
// good here: evicting the pods it counts may clear it.
func (p *Plugin) reachOf(pod *corev1.Pod, statuses fwk.NodeToStatusReader, nodes fwk.NodeInfoLister) (*reach, error) {
	r := &reach{key: shapeKey(pod), leaving: p.state.Leaving}
	if p.state.Settings().CardRoomFirst {
		r.cards = p.state.IsCardResource
	}
	if ran, known := state.FilterRan(statuses); !known || !ran {
		return r, nil
	}
	unresolvable, err := statuses.NodesForStatusCode(nodes, fwk.UnschedulableAndUnresolvable)
	if err != nil {
		return nil, err
	}
	r.skip = make(map[string]bool, len(unresolvable))
	for _, ni := range unresolvable {
		name := ni.Node().Name
		if statuses.Get(name).Plugin() != schedulernames.InterPodAffinity {
			r.skip[name] = true
		}
	}
	return r, nil
}

// giveUp fails the gang CardinalGang's PostFilter, run before this one,
// left to fail when preemption cannot make room; else CardinalGang's
// PostFilter, run next, does.
func (p *Plugin) giveUp(cs fwk.CycleState, msg string) *fwk.Status {
	if k, reason, ok := state.DeferredGangFailure(cs); ok {
		p.state.FailGang(k, reason)
		msg += fmt.Sprintf("; gang %s gave back what it held and retries in %s", k, p.state.Settings().GangBackoff)
	}
	return fwk.NewStatus(fwk.Unschedulable, msg)
}

func (p *Plugin) preempt(ctx context.Context, pod *corev1.Pod, pre state.Preemptor, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	usage, inFlight := p.state.Usages()
	capRes, capCards := p.state.Capacity()
	f := settled(pre.Queue, capRes, capCards, usage, inFlight)
	asked := asksOf(pre, usage[pre.Queue], p.state.IsCardResource)
	short := below(usage[pre.Queue], asked, f)
	from := reclaimFrom(pre, usage, short)
	queues := []string{pre.Queue}
	for q := range from {
		queues = append(queues, q)
	}
	sort.Strings(queues[1:])
	atShareOf := func(q string, pods []state.PodView) bool { return atShare(usage[q], pods, asked.models, short) }
	units := eligibility{pre: pre, reclaimFrom: from, atShare: atShareOf}.units(p.state.PlacedIn(queues...))
	if len(units) == 0 {
		attempts.WithLabelValues("no-victims").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("no preemption: no pod that %s may evict (queue %s)", who(pre, pod), pre.Queue))
	}
	nodeCards := func(node string, pod *corev1.Pod) map[string]int64 {
		n, _ := p.state.Node(node)
		return n.PodCards(pod)
	}
	refuse := func(r *result) string { return guard(pre, usage, r.members, r.evicted, short, nodeCards) }
	r, err := p.reachOf(pod, statuses, p.handle.SnapshotSharedLister().NodeInfos())
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	res, why, err := plan(ctx, p.handle, pre, r, units, refuse)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if why != "" {
		attempts.WithLabelValues("does-not-fit").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "no preemption: "+why)
	}
	if len(res.evicted) == 0 {
		attempts.WithLabelValues("room-free").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "no preemption needed: its min fits as things are now; trying again")
	}
	if res.refused != "" {
		attempts.WithLabelValues("guard").Inc()
		return nil, fwk.NewStatus(fwk.Unschedulable, "no reclaim: "+res.refused)
	}
	return p.execute(ctx, pod, pre, res, short), fwk.NewStatus(fwk.Success)
}
