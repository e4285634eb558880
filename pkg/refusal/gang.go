package refusal

import (
	"fmt"
	"sort"
	"strings"
	"time"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// Refusals of gangs (SPEC §2): a gang that is not whole, one that waits
// for another, one that backs off, one whose pods cannot be one gang.

// NoPodGroup: the pod names a PodGroup that does not exist.
type NoPodGroup struct {
	Gang string
}

func (r NoPodGroup) String() string {
	return fmt.Sprintf("PodGroup %s not found: create it, or remove the label %s from the pod", r.Gang, schedv1alpha1.PodGroupLabel)
}

func (r NoPodGroup) Error() string { return r.String() }

func (r NoPodGroup) Fix() string {
	return fmt.Sprintf("create the PodGroup %s, or remove the label %s from the pod", r.Gang, schedv1alpha1.PodGroupLabel)
}

// PodGroupUnreadable: the PodGroup API cannot be read (no CRD, no RBAC).
type PodGroupUnreadable struct {
	Gang, Why string
}

func (r PodGroupUnreadable) String() string {
	return fmt.Sprintf("PodGroup %s cannot be read: %s; the gang's pods wait until it can", r.Gang, r.Why)
}

func (r PodGroupUnreadable) Error() string { return r.String() }

func (r PodGroupUnreadable) Fix() string {
	return "install the scheduler-plugins PodGroup CRD and the RBAC to read it (kubectl apply -k config/)"
}

// AwaitingGroup: the pod's workload is of a kind Cardinal groups into gangs
// (SPEC §7), and the grouper has not yet made its PodGroup or ruled it a
// gang of one: it is not scheduled alone meanwhile.
type AwaitingGroup struct {
	// Pod is namespace/name; Owner the pod's controller, "Job train".
	Pod, Owner string
}

func (r AwaitingGroup) String() string {
	return fmt.Sprintf("pod %s of %s waits for Cardinal to make its PodGroup, or to find that it is a gang of one", r.Pod, r.Owner)
}

func (r AwaitingGroup) Error() string { return r.String() }

func (r AwaitingGroup) Fix() string {
	return "nothing if it lasts a moment: the grouper runs in the leading cardinal-scheduler; if it lasts, its events on the pod and the workload say why"
}

// GangIncomplete: fewer of the gang's pods exist than its minMember, not
// counting those behind scheduling gates (Gated).
type GangIncomplete struct {
	Gang             string
	Have, Gated, Min int
}

func (r GangIncomplete) String() string {
	if r.Gated > 0 {
		return fmt.Sprintf("gang %s has %d of its minMember %d pods that can be scheduled (%d more behind scheduling gates or waiting for their resource claims); waiting for %d more",
			r.Gang, r.Have, r.Min, r.Gated, r.Min-r.Have)
	}
	return fmt.Sprintf("gang %s has %d of its minMember %d pods; waiting for %d more", r.Gang, r.Have, r.Min, r.Min-r.Have)
}

func (r GangIncomplete) Error() string { return r.String() }

func (r GangIncomplete) Fix() string {
	if r.Gated > 0 {
		return fmt.Sprintf("lift the scheduling gates (spec.schedulingGates) or make the resource claims of %d of its held pods, create more pods of the gang, or lower its minMember", min(r.Gated, r.Min-r.Have))
	}
	return fmt.Sprintf("create %d more pods of the gang, or lower its minMember", r.Min-r.Have)
}

// GangBeingPlaced: a min member waits while another gang is placed; gangs
// are placed one at a time, so none deadlocks (SPEC §2.3).
type GangBeingPlaced struct {
	Gang        string
	Placed, Min int
}

func (r GangBeingPlaced) String() string {
	return fmt.Sprintf("%s (%d of its min %d placed)", r.identity(), r.Placed, r.Min)
}

func (r GangBeingPlaced) identity() string {
	return fmt.Sprintf("waiting for gang %s, which is being placed", r.Gang)
}

func (r GangBeingPlaced) Error() string { return r.String() }

func (r GangBeingPlaced) Fix() string {
	return fmt.Sprintf("nothing: it is tried as soon as gang %s is placed or gives up (gangs are placed one at a time, so none deadlocks)", r.Gang)
}

// ElasticWaits: an elastic pod waits while another gang still needs its
// min (SPEC §2.4).
type ElasticWaits struct {
	Gang         string
	Missing, Min int
}

func (r ElasticWaits) String() string {
	return fmt.Sprintf("%s %d more pods for its min of %d", r.identity(), r.Missing, r.Min)
}

func (r ElasticWaits) identity() string {
	return fmt.Sprintf("elastic pods wait while gang %s still needs", r.Gang)
}

func (r ElasticWaits) Error() string { return r.String() }

func (r ElasticWaits) Fix() string {
	return fmt.Sprintf("nothing: elastic pods are placed once gang %s has its min, on room nobody's min needs", r.Gang)
}

// BackingOff: the gang failed to place its min and is not tried again
// before Until (SPEC §2.5).
type BackingOff struct {
	Gang  string
	Until time.Time
	// After is why the attempt before failed.
	After string
}

func (r BackingOff) String() string {
	return fmt.Sprintf("gang %s is backing off until %s after: %s", r.Gang, r.until(), r.After)
}

func (r BackingOff) Error() string { return r.String() }

func (r BackingOff) Fix() string { return fmt.Sprintf("nothing: it is tried again at %s", r.until()) }

func (r BackingOff) until() string { return r.Until.UTC().Format(time.RFC3339) }

// GangSplitScheduler: some of the gang's pods name another scheduler, so
// no scheduler can place it all or nothing.
type GangSplitScheduler struct {
	Gang string
	// Others are the pods that name another scheduler, as "pod (scheduler)".
	Others []string
	// Scheduler is Cardinal's scheduler name.
	Scheduler string
}

func (r GangSplitScheduler) String() string {
	return fmt.Sprintf("gang %s has pods that name another scheduler: %s; every pod of a gang must set schedulerName: %s, or none of it can be placed all or nothing",
		r.Gang, strings.Join(r.Others, ", "), r.Scheduler)
}

func (r GangSplitScheduler) Error() string { return r.String() }

func (r GangSplitScheduler) Fix() string {
	return fmt.Sprintf("set schedulerName: %s on every pod of gang %s", r.Scheduler, r.Gang)
}

// GangSplitQueues: the gang's pods resolve to different queues; one gang
// is charged to one queue.
type GangSplitQueues struct {
	Gang string
	// Queues counts the gang's pods by the queue each resolves to.
	Queues map[string]int
}

func (r GangSplitQueues) String() string {
	parts := make([]string, 0, len(r.Queues))
	for q, n := range r.Queues {
		parts = append(parts, fmt.Sprintf("%s (%d pods)", q, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("gang %s's pods resolve to different queues: %s; set the label %s on the PodGroup so the gang is charged to one queue",
		r.Gang, strings.Join(parts, ", "), v1alpha1.QueueLabel)
}

func (r GangSplitQueues) Error() string { return r.String() }

func (r GangSplitQueues) Fix() string {
	return fmt.Sprintf("label PodGroup %s with %s, or give all its pods the same queue", r.Gang, v1alpha1.QueueLabel)
}

// GangDoesNotFit: free room on nodes holds fewer pods like this one than
// the rest of the gang's min (SPEC §2.2).
type GangDoesNotFit struct {
	Gang          string
	Missing, Room int
}

func (r GangDoesNotFit) String() string {
	return fmt.Sprintf("gang %s does not fit: its min needs %d more pods placed and free resources hold at most %d like them", r.Gang, r.Missing, r.Room)
}

func (r GangDoesNotFit) Error() string   { return r.String() }
func (r GangDoesNotFit) Fix() string     { return RoomFix(r, false) }
func (r GangDoesNotFit) Lacking() string { return "free room" }

// ElasticNoRoom: an elastic pod waits for free capacity; elastic pods
// never preempt (SPEC §5.4).
type ElasticNoRoom struct {
	Gang string
}

func (r ElasticNoRoom) String() string {
	return fmt.Sprintf("elastic pod of gang %s waits for free capacity; elastic pods never preempt", r.Gang)
}

func (r ElasticNoRoom) Error() string   { return r.String() }
func (r ElasticNoRoom) Fix() string     { return RoomFix(r, true) }
func (r ElasticNoRoom) Lacking() string { return "free room" }

func init() {
	register[NoPodGroup]()
	register[PodGroupUnreadable]()
	register[GangIncomplete]()
	register[GangBeingPlaced]()
	register[ElasticWaits]()
	register[BackingOff]()
	register[GangSplitScheduler]()
	register[GangSplitQueues]()
	register[GangDoesNotFit]()
	register[ElasticNoRoom]()
	register[AwaitingGroup]()
}
