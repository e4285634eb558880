package preemption

import (
	"sort"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

// kind is what a victim unit is; the order is how much it matters (SPEC
// §5.3): elastic pods go first, then pods without a gang, then gangs.
type kind int

const (
	elasticPod kind = iota
	singlePod
	wholeGang
)

func (k kind) String() string {
	return [...]string{"elastic pod", "pod", "gang"}[k]
}

// unit is what preemption evicts together: one elastic pod, one pod
// without a gang, or the min members of a gang. A gang is never left
// running below its min: its elastic pods are units of their own, evicted
// first, and go with it if its min members do (parent).
type unit struct {
	kind     kind
	pods     []state.PodView
	queue    string
	gang     gang.Key
	priority int32
	// rank is an elastic pod's place in its gang (higher is newer).
	rank int
	// cards is how many cards its pods are charged, in all models.
	cards int64
	// timesEvicted: how many preemptions have evicted pods of its gang.
	timesEvicted int
	// reclaim: the unit is in another queue than the preemptor's.
	reclaim bool
	parent  *unit
	evicted bool
}

// moreImportant orders units most important first, the order they are
// spared in (SPEC §5.3): gangs before pods without a gang before elastic
// pods; higher priority first; the older elastic pods of a gang first (the
// newest goes first); more cards, then more pods, first; then a gang
// evicted more often first, so that of gangs alike the same one is not
// taken each time it is placed again (it would never finish).
func moreImportant(a, b *unit) bool {
	if a.kind != b.kind {
		return a.kind > b.kind
	}
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.kind == elasticPod && a.gang == b.gang && a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.cards != b.cards {
		return a.cards > b.cards
	}
	if len(a.pods) != len(b.pods) {
		return len(a.pods) > len(b.pods)
	}
	if a.timesEvicted != b.timesEvicted {
		return a.timesEvicted > b.timesEvicted
	}
	return a.pods[0].Pod.Namespace+"/"+a.pods[0].Pod.Name < b.pods[0].Pod.Namespace+"/"+b.pods[0].Pod.Name
}

// eligibility says which placed pods a preemptor may evict (SPEC §5.1-5.4).
type eligibility struct {
	pre state.Preemptor
	// reclaimFrom are the queues above their deserved share that the
	// preemptor's queue, below its own, may reclaim from, with whether they
	// are reclaimable (else only their elastic pods may be taken).
	reclaimFrom map[string]bool
	// atShare, when set, tells pods of a queue reclaimed from whose
	// eviction alone would take that queue below its deserved share of
	// something the guard settles (guard.go's atShare): they are no victim
	// on their own (an elastic pod may still go with its gang), so a plan
	// looks for room where the queue is above its share instead of being
	// found there and refused.
	atShare func(queue string, pods []state.PodView) bool
}

// units groups the eligible placed pods into victim units. Non-preemptible
// pods are never victims; of a semi-preemptible gang only the elastic pods
// are. In the preemptor's own queue, elastic pods of any priority are, and
// other preemptible work of lower priority; in a queue it reclaims from,
// elastic pods always, other preemptible work where the queue is
// reclaimable, whatever its priority.
func (el eligibility) units(placed []state.PodView) []*unit {
	byGang := map[gang.Key][]state.PodView{}
	var out []*unit
	for _, p := range placed {
		if p.Gang != "" {
			if p.Gang != el.pre.Gang {
				byGang[p.Gang] = append(byGang[p.Gang], p)
			}
			continue
		}
		if u := el.whole(singlePod, []state.PodView{p}); u != nil {
			out = append(out, u)
		}
	}
	for _, pods := range byGang {
		var members, elastic []state.PodView
		for _, p := range pods {
			if p.Elastic {
				elastic = append(elastic, p)
			} else {
				members = append(members, p)
			}
		}
		parent := el.whole(wholeGang, members)
		going := append([]state.PodView(nil), members...)
		var kept, riders []state.PodView
		for _, p := range elastic {
			switch {
			case p.Preemptibility == workload.NonPreemptible || !el.mayTake(p.Queue, true):
				continue // never taken; its gang may still go (SPEC 5.1 first)
			case el.spent(p.Queue, []state.PodView{p}):
				// Not taken alone, where its queue would fall below its
				// share; it goes with its gang, judged together, so that
				// it shields nothing.
				riders = append(riders, p)
			default:
				kept = append(kept, p)
			}
			going = append(going, p)
		}
		if parent != nil && el.spent(parent.queue, going) {
			parent = nil
		}
		if parent != nil {
			parent.pods = append(parent.pods[:len(parent.pods):len(parent.pods)], riders...)
			for _, p := range riders {
				parent.cards += cardsOf(p)
			}
			out = append(out, parent)
		}
		for _, p := range kept {
			out = append(out, &unit{kind: elasticPod, pods: []state.PodView{p}, queue: p.Queue, gang: p.Gang,
				priority: p.Priority, rank: p.Rank, cards: cardsOf(p), timesEvicted: p.GangEvicted, reclaim: p.Queue != el.pre.Queue, parent: parent})
		}
	}
	sort.Slice(out, func(i, j int) bool { return moreImportant(out[i], out[j]) })
	return out
}

// whole is the unit of pods evicted together (a pod without a gang, or a
// gang's min members), or nil when they may not be.
func (el eligibility) whole(k kind, pods []state.PodView) *unit {
	if len(pods) == 0 {
		return nil
	}
	u := &unit{kind: k, pods: pods, queue: pods[0].Queue, gang: pods[0].Gang, priority: pods[0].Priority,
		timesEvicted: pods[0].GangEvicted, reclaim: pods[0].Queue != el.pre.Queue}
	for _, p := range pods {
		if p.Preemptibility != workload.Preemptible {
			return nil
		}
		u.priority = max(u.priority, p.Priority)
		u.cards += cardsOf(p)
	}
	if !el.mayTake(u.queue, false) || el.spent(u.queue, pods) {
		return nil
	}
	if !u.reclaim && u.priority >= el.pre.Priority {
		return nil // in its own queue, only lower-priority work gives way
	}
	return u
}

// mayTake tells whether the preemptor may take pods of queue: its own, or
// one it reclaims from (non-elastic work only where it is reclaimable).
func (el eligibility) mayTake(queue string, elastic bool) bool {
	if queue == el.pre.Queue {
		return true
	}
	reclaimable, ok := el.reclaimFrom[queue]
	return ok && (elastic || reclaimable)
}

// spent tells pods of another queue that the guard would not let go.
func (el eligibility) spent(queue string, pods []state.PodView) bool {
	return queue != el.pre.Queue && el.atShare != nil && el.atShare(queue, pods)
}

func cardsOf(p state.PodView) int64 {
	var n int64
	for _, c := range p.Cards {
		n += c
	}
	return n
}
