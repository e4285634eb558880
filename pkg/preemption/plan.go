package preemption

import (
	"context"
	"fmt"
	"sort"

	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/state"
)

// The plan, after kube-scheduler 1.37's workload-aware preemption (which
// serves native PodGroups only): remove every eligible victim from a copy
// of the cluster, place the gang's whole missing min at once through the
// framework's Filter plugins (so queue capability and card quota are
// checked on the same numbers the quota plugins keep, adjusted by their
// AddPod and RemovePod), then give back victims, most important first,
// while the placement still fits. If the min does not fit with every
// eligible victim gone, nothing is evicted (SPEC §5.5).

// result is a plan: where the members go and which units are evicted.
type result struct {
	members []*member
	evicted []*unit
	// refused says why the reclaim guard refuses the plan ("" when not).
	refused string
}

// plan finds room for pre's missing min among units, or says why there is
// none. It looks among elastic pods alone first, then adds single pods,
// then whole gangs (SPEC §5.3): a gang is broken only when lesser victims
// cannot make the room, wherever they are. refuse is the reclaim guard: a
// tier whose plan it refuses gives way to the next, and a refused plan is
// returned (res.refused says why) only when no tier has one it passes.
func plan(ctx context.Context, h fwk.Handle, pre state.Preemptor, r *reach, units []*unit, refuse func(*result) string) (*result, string, error) {
	pl := &planner{ctx: ctx, h: h, pre: pre, asks: membersOf(pre, r), reach: r, refuse: refuse}
	var refused *result
	var why string
	tried := -1
	for _, most := range []kind{elasticPod, singlePod, wholeGang} {
		var some []*unit
		for _, u := range units {
			if u.kind <= most {
				some = append(some, u)
			}
		}
		if len(some) == 0 || len(some) == tried {
			continue
		}
		tried = len(some)
		res, w, err := pl.among(some, len(some) == len(units))
		switch {
		case err != nil:
			return nil, "", err
		case w != "":
			why = w
		case res.refused == "":
			return res, "", nil
		default:
			refused = res
		}
	}
	if refused != nil {
		return refused, "", nil
	}
	return nil, why, nil
}

// planner is one plan's inputs, read once for every placement it tries.
type planner struct {
	ctx    context.Context
	h      fwk.Handle
	pre    state.Preemptor
	asks   []*member
	reach  *reach
	refuse func(*result) string
}

// among finds room for pre's missing min with every unit gone, then
// gives units back while the room stays.
//
// The members are placed first-fit, so with every unit gone they may fill
// a node that pods of many gangs share, and every one of those gangs must
// then go, where one gang spread over several nodes would have made room
// (a reclaim that takes all of a queue's cards for one gang's worth is
// then refused by the guard, and the queue that needs them waits). So when
// that plan evicts two gangs or more, or the guard refuses it, the members
// are placed again with only the fewest least important units gone that
// leave room, found by halving (first-fit is not monotone: halving may
// miss a smaller set that fits, which costs a cheaper plan, never a wrong
// one), and the plan the guard passes is kept, else the cheaper. Only the
// last tier searches (search): the ones before give way to it.
func (pl *planner) among(units []*unit, search bool) (*result, string, error) {
	s, placed, held, why, err := pl.placeWithout(units)
	if err != nil || why != "" {
		return nil, why, err
	}
	evicted, err := spare(s, placed, held)
	if err != nil {
		return nil, "", err
	}
	res := &result{members: placed, evicted: evicted}
	res.refused = pl.refuse(res)
	if !search || (gangsIn(evicted) < 2 && res.refused == "") || len(held) < 2 {
		return res, "", nil
	}
	// Least important first: elastic pods before single pods before whole
	// gangs, so a gang in a prefix always has its elastic pods with it.
	least := append([]*unit(nil), held...)
	sort.SliceStable(least, func(i, j int) bool { return moreImportant(least[j], least[i]) })
	var fewer *result
	var fewerSim *sim
	var fewerHeld []*unit
	for lo, hi := 1, len(least); lo < hi; {
		mid := (lo + hi) / 2
		ms, mplaced, mheld, mwhy, err := pl.placeWithout(least[:mid])
		if err != nil {
			return nil, "", err
		}
		if mwhy != "" {
			lo = mid + 1
			continue
		}
		hi = mid
		fewer, fewerSim, fewerHeld = &result{members: mplaced}, ms, mheld
	}
	if fewer == nil {
		return res, "", nil
	}
	mark(held, nil)
	if fewer.evicted, err = spare(fewerSim, fewer.members, fewerHeld); err != nil {
		return nil, "", err
	}
	fewer.refused = pl.refuse(fewer)
	keep := fewer
	switch {
	case (res.refused == "") != (fewer.refused == ""):
		if res.refused == "" {
			keep = res
		}
	case !costlier(res.evicted, fewer.evicted):
		keep = res // no cheaper: the first plan spares the more important
	}
	mark(held, keep.evicted)
	return keep, "", nil
}

// mark sets the units' evicted flags to say the plan evicting evicted.
func mark(units, evicted []*unit) {
	for _, u := range units {
		u.evicted = false
	}
	for _, u := range evicted {
		u.evicted = true
	}
}

// gangsIn counts the whole gangs among units.
func gangsIn(units []*unit) int {
	n := 0
	for _, u := range units {
		if u.kind == wholeGang {
			n++
		}
	}
	return n
}

// costlier tells whether evicting a costs more than evicting b (SPEC §5.3):
// what they put at stake, most important first (kind, then priority, unit
// by unit), then more whole gangs, more cards, more pods.
func costlier(a, b []*unit) bool {
	type stake struct {
		kind     kind
		priority int32
	}
	stakes := func(us []*unit) []stake {
		out := make([]stake, 0, len(us))
		for _, u := range us {
			out = append(out, stake{u.kind, u.priority})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].kind != out[j].kind {
				return out[i].kind > out[j].kind
			}
			return out[i].priority > out[j].priority
		})
		return out
	}
	count := func(us []*unit) (gangs int, cards int64, pods int) {
		for _, u := range us {
			if u.kind == wholeGang {
				gangs++
			}
			cards += u.cards
			pods += len(u.pods)
		}
		return
	}
	as, bs := stakes(a), stakes(b)
	for i := range min(len(as), len(bs)) {
		if as[i] != bs[i] {
			if as[i].kind != bs[i].kind {
				return as[i].kind > bs[i].kind
			}
			return as[i].priority > bs[i].priority
		}
	}
	ag, ac, ap := count(a)
	bg, bc, bp := count(b)
	switch {
	case ag != bg:
		return ag > bg
	case ac != bc:
		return ac > bc
	}
	return ap > bp
}

// placeWithout places the preemptor's missing min on a copy of the cluster
// with every unit gone (those the snapshot holds where the state says:
// held), or says why it does not fit.
func (pl *planner) placeWithout(units []*unit) (*sim, []*member, []*unit, string, error) {
	pre := pl.pre
	s, err := newSim(pl.ctx, pl.h, pl.reach)
	if err != nil {
		return nil, nil, nil, "", err
	}
	byKey := map[string]*shape{}
	members := make([]*member, 0, len(pl.asks))
	for _, a := range pl.asks {
		sh, err := s.shapeOf(a.pod, a.key, byKey)
		if err != nil {
			if len(members) == 0 {
				return nil, nil, nil, err.Error(), nil
			}
			continue
		}
		m := *a
		m.st, m.node = sh, ""
		members = append(members, &m)
	}
	units = s.held(units)
	if n, ok := s.roomFor(pre.Missing, members, units); ok && n < pre.Missing {
		return nil, nil, nil, fmt.Sprintf("its min needs %d more pods placed and, with every pod it may evict gone, they do not fit (room for %d)", pre.Missing, n), nil
	}
	cost := map[string]int{}
	for _, u := range units {
		for _, p := range u.pods {
			if err := s.remove(s.victim(p.Pod, p.Node), p.Node); err != nil {
				return nil, nil, nil, "", err
			}
			cost[p.Node] += 1 + 1000*int(u.kind)
		}
	}
	type costed struct {
		name string
		cost int
	}
	byCost := make([]costed, 0, len(s.nodes))
	for name := range s.nodes {
		byCost = append(byCost, costed{name, cost[name]})
	}
	// Nodes that need fewer and lesser victims first: free room, then
	// elastic pods, then pods without a gang, then gangs.
	sort.Slice(byCost, func(i, j int) bool {
		if byCost[i].cost != byCost[j].cost {
			return byCost[i].cost < byCost[j].cost
		}
		return byCost[i].name < byCost[j].name
	})
	order := make([]string, len(byCost))
	for i, c := range byCost {
		order[i] = c.name
	}
	var placed []*member
	// A kind of member that fit nowhere fits nowhere until another member
	// is placed (its pods may be what the next one's affinity asks for, a
	// worker its leader's): it is skipped until one is, then tried again
	// in another pass.
	left := members
	for {
		failed := map[*shape]bool{}
		var unplaced []*member
		again := false
		for i, m := range left {
			if len(placed) == pre.Missing || len(placed)+len(unplaced)+len(left)-i < pre.Missing {
				break // placed, or too few left to place
			}
			if failed[m.st] {
				unplaced = append(unplaced, m)
				continue
			}
			node := ""
			for _, n := range order {
				if s.fits(m, n) {
					node = n
					break
				}
			}
			if node == "" {
				failed[m.st] = true
				unplaced = append(unplaced, m)
				continue
			}
			m.node = node
			if err := s.add(m.info, node); err != nil {
				return nil, nil, nil, "", err
			}
			placed = append(placed, m)
			again = again || len(failed) > 0
			clear(failed)
		}
		if !again || len(placed) == pre.Missing {
			break
		}
		left = unplaced
	}
	if len(placed) < pre.Missing {
		return nil, nil, nil, fmt.Sprintf("its min needs %d more pods placed and, with every pod it may evict gone, they do not fit (%d placed)", pre.Missing, len(placed)), nil
	}
	return s, placed, units, "", nil
}

// spare gives victims back, most important first, while every placed
// member still fits: first, at once, those on nodes no member uses (they
// only matter to queue quota); then one unit at a time. A gang's elastic
// pods go with its min members when those go.
func spare(s *sim, placed []*member, units []*unit) ([]*unit, error) {
	used := map[string][]*member{}
	for _, m := range placed {
		used[m.node] = append(used[m.node], m)
	}
	onUsed := func(u *unit) bool {
		for _, p := range u.pods {
			if len(used[p.Node]) > 0 {
				return true
			}
		}
		return false
	}
	var far, near []*unit
	for _, u := range units {
		u.evicted = true
		if onUsed(u) {
			near = append(near, u)
		} else {
			far = append(far, u)
		}
	}
	if len(far) > 0 {
		ok, err := s.giveBack(far, placed)
		if err != nil {
			return nil, err
		}
		if ok {
			for _, u := range far {
				u.evicted = false
			}
			far = nil
		}
	}
	rest := append(far, near...)
	sort.SliceStable(rest, func(i, j int) bool { return moreImportant(rest[i], rest[j]) })
	for _, u := range rest {
		if u.parent != nil && u.parent.evicted {
			continue
		}
		affected := placed
		if u.reclaim {
			// Another queue's pods touch only the nodes they are on; the
			// members there are checked in the order they were placed,
			// each with those before it (a worker after its leader).
			on := map[string]bool{}
			for _, p := range u.pods {
				on[p.Node] = true
			}
			affected = nil
			for _, m := range placed {
				if on[m.node] {
					affected = append(affected, m)
				}
			}
		}
		ok, err := s.giveBack([]*unit{u}, affected)
		if err != nil {
			return nil, err
		}
		u.evicted = !ok
	}
	var evicted []*unit
	for _, u := range units {
		if u.evicted || (u.parent != nil && u.parent.evicted) {
			u.evicted = true
			evicted = append(evicted, u)
		}
	}
	return evicted, nil
}
