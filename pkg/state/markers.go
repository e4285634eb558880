package state

import (
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
)

// Cardinal's plugins tell each other what happened in a scheduling cycle
// through markers in its CycleState, never by reading each other's own
// state (STYLE: plugins do not import each other). Every marker is here:
//
//	marker                     written by                           read by
//	CardinalSimulation         preemption's plan (MarkSimulation)   every PreFilter (Simulating): only record, never refuse or park
//	CardinalRefusedAtPreFilter a Cardinal PreFilter that refused    CardinalCardQuota's narrowing (RefusedAtPreFilter): no nodes to narrow
//	CardinalNarrowed           CardinalCardQuota's PreFilter        every Cardinal PostFilter (AfterNarrowingMiss): a miss is no failure
//	CardinalPreemptionTried    CardinalPreemption's PostFilter      CardinalGang's PostFilter (PreemptionTried): fail the gang now
//	CardinalGangFailure        CardinalGang's PostFilter            CardinalPreemption's PostFilter (DeferredGangFailure): fail it after
//
// Each marker is a value whose Clone returns itself: preemption clones the
// CycleState to simulate, and a marker means the same in the clone.

const (
	narrowedKey fwk.StateKey = "CardinalNarrowed"
	refusedKey  fwk.StateKey = "CardinalRefusedAtPreFilter"
)

// narrowing is what a cycle narrowed its pod to.
type narrowing struct {
	model string
	nodes int
}

func (n narrowing) Clone() fwk.StateData { return n }

// MarkNarrowed records in cs that the cycle tries its pod only on the
// nodes, of card model model, that looked to have room for it.
func MarkNarrowed(cs fwk.CycleState, model string, nodes int) {
	cs.Write(narrowedKey, narrowing{model: model, nodes: nodes})
}

type refusedMark struct{}

func (refusedMark) Clone() fwk.StateData { return refusedMark{} }

// MarkRefusedAtPreFilter records in cs that a Cardinal PreFilter refused
// the pod: Filter will not run, and there are no nodes to narrow.
func MarkRefusedAtPreFilter(cs fwk.CycleState) { cs.Write(refusedKey, refusedMark{}) }

// RefusedAtPreFilter tells whether a Cardinal PreFilter that ran before
// refused the pod in this cycle.
func RefusedAtPreFilter(cs fwk.CycleState) bool {
	_, err := cs.Read(refusedKey)
	return err == nil
}

// simulationKey marks a CycleState that preemption made to try placements
// (pkg/preemption): the plugins' PreFilter then only records what Filter
// needs, and neither refuses on numbers Filter checks anyway (quota freed by
// simulated victims shows only through RemovePod), nor parks pods, nor
// changes the state.
const simulationKey fwk.StateKey = "CardinalSimulation"

type simulationMark struct{}

func (simulationMark) Clone() fwk.StateData { return simulationMark{} }

// MarkSimulation marks cs as a preemption simulation's.
func MarkSimulation(cs fwk.CycleState) { cs.Write(simulationKey, simulationMark{}) }

// Simulating tells whether cs is a preemption simulation's.
func Simulating(cs fwk.CycleState) bool {
	_, err := cs.Read(simulationKey)
	return err == nil
}

// A gang that cannot place its min gives back what it holds and backs off
// (CardinalGang's PostFilter), but not before preemption has tried to make
// room for it: backing off, it could not preempt. In whichever order a
// profile lists the two PostFilters, the failure comes last: CardinalGang,
// running first, defers it to CardinalPreemption through the cycle state.
const (
	preemptionTriedKey fwk.StateKey = "CardinalPreemptionTried"
	gangFailureKey     fwk.StateKey = "CardinalGangFailure"
)

type gangFailure struct {
	gang   gang.Key
	reason string
}

func (f gangFailure) Clone() fwk.StateData { return f }

// MarkPreemptionTried records in cs that preemption ran in this cycle.
func MarkPreemptionTried(cs fwk.CycleState) { cs.Write(preemptionTriedKey, gangFailure{}) }

// PreemptionTried tells whether preemption ran in this cycle.
func PreemptionTried(cs fwk.CycleState) bool {
	_, err := cs.Read(preemptionTriedKey)
	return err == nil
}

// DeferGangFailure leaves a gang's failure, for reason, to preemption when
// it cannot make room.
func DeferGangFailure(cs fwk.CycleState, k gang.Key, reason string) {
	cs.Write(gangFailureKey, gangFailure{gang: k, reason: reason})
}

// DeferredGangFailure is the failure DeferGangFailure left, if any.
func DeferredGangFailure(cs fwk.CycleState) (k gang.Key, reason string, ok bool) {
	d, err := cs.Read(gangFailureKey)
	if err != nil {
		return "", "", false
	}
	f := d.(gangFailure)
	return f.gang, f.reason, true
}
