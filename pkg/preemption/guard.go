package preemption

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
)

// Reclaim across queues is decided on deserved shares (SPEC §3.2, §5.4,
// §5.6), per resource and per card model, with the numbers Queue status
// shows: a queue below its share of something it asks for may take from
// queues above theirs, and only so far that afterwards it is not above its
// share and none of them is below its own. Then neither can take it back:
// reclaim settles.

// dim is one resource or one card model, and its deserved share.
type dim struct {
	name      string
	cards     bool
	allocated int64
	deserved  int64
}

func (d dim) String() string {
	if d.cards {
		return fmt.Sprintf("%s share, %d of %d", d.name, d.allocated, d.deserved)
	}
	r := corev1.ResourceName(d.name)
	return fmt.Sprintf("%s share, %s of %s", d.name, quota.Format(r, d.allocated), quota.Format(r, d.deserved))
}

// asks is what a preemptor's missing min asks for: resources, and cards by
// the models its pods may use.
type asks struct {
	resources quota.Resources
	// models are the card models its pods may use; cards how many cards
	// they ask for in all.
	models map[string]bool
	cards  int64
}

func asksOf(pre state.Preemptor, u state.Usage, isCard func(corev1.ResourceName) bool) asks {
	a := asks{resources: quota.Resources{}, models: map[string]bool{}}
	for _, pod := range pre.Pods[:min(pre.Missing, len(pre.Pods))] {
		a.resources.Add(quota.PodRequests(pod))
		var names []string
		if v, _, ok := cardmodel.Annotation(pod.Annotations, v1alpha1.CardNameAnnotation, v1alpha1.VolcanoCardNameAnnotation); ok {
			names, _ = cardmodel.ParseNames(v)
		}
		for r, n := range cardmodel.CardRequests(pod, isCard) {
			a.cards += n
			for m, c := range u.Cards {
				if c.Listed && cardmodel.Matches(m, r) && (len(names) == 0 || slices.Contains(names, m)) {
					a.models[m] = true
				}
			}
		}
	}
	return a
}

// free is what the cluster has that no queue's pods use: per resource, and
// per card model.
type free struct {
	resources quota.Resources
	cards     map[string]int64
}

func freeOf(capRes quota.Resources, capCards map[string]int64, usage map[string]state.Usage) free {
	f := free{resources: capRes.Clone(), cards: map[string]int64{}}
	for m, n := range capCards {
		f.cards[m] = n
	}
	for _, u := range usage {
		f.resources.Sub(u.Allocated)
		for m, c := range u.Cards {
			f.cards[m] -= c.Allocated
		}
	}
	return f
}

// settled judges the cluster with the preemptions under way (inFlight):
// it returns what is free, what nobody uses now nor is kept for one of
// them beyond its victims' room (which usage still charges), and changes
// usage in place to each queue's as it will be once they are done. Shares
// are judged on the latter: a second gang of a queue sees the room already
// being made for the first, and a queue being taken from is not taken from
// again for pods it is already giving up. A victim's room is not free
// while it terminates, even where more was evicted than is kept. The
// preemptor's own queue (own) keeps being charged for its pods leaving:
// they still hold their cards, and a queue whose pods take long to go
// must not reclaim more meanwhile (a pod of its own evicted for a small
// one, or its reclaimed pods ignoring SIGTERM for a day, would let it hold
// twice its share). Each judgement errs towards evicting less.
func settled(own string, capRes quota.Resources, capCards map[string]int64, usage map[string]state.Usage, inFlight map[string]state.InFlight) free {
	f := freeOf(capRes, capCards, usage)
	for q, c := range inFlight {
		f.resources.Sub(c.Beyond.Resources)
		for m, n := range c.Beyond.Cards {
			f.cards[m] -= n
		}
		u, ok := usage[q]
		if !ok {
			continue
		}
		if q == own {
			c.Leaving = state.Charge{}
		}
		u.Allocated = u.Allocated.Clone()
		u.Allocated.Sub(c.Leaving.Resources)
		u.Allocated.Add(c.Coming.Resources)
		cards := make(map[string]state.CardUsage, len(u.Cards))
		for m, cu := range u.Cards {
			cards[m] = cu
		}
		for m, n := range c.Leaving.Cards {
			cu := cards[m]
			cu.Allocated -= n
			cards[m] = cu
		}
		for m, n := range c.Coming.Cards {
			cu := cards[m]
			cu.Allocated += n
			cards[m] = cu
		}
		u.Cards = cards
		usage[q] = u
	}
	return f
}

// below lists what the preemptor's queue is short of, cards first: the
// resources and card models it asks for, is below its deserved share of,
// and the cluster has too little of free. Reclaim is for them only; a
// resource the cluster has plenty of is nobody's to reclaim.
func below(u state.Usage, a asks, f free) []dim {
	var out []dim
	for m := range a.models {
		if c := u.Cards[m]; c.Allocated < c.Deserved && f.cards[m] < a.cards {
			out = append(out, dim{name: m, cards: true, allocated: c.Allocated, deserved: c.Deserved})
		}
	}
	for r, v := range a.resources {
		if v > 0 && u.Allocated[r] < u.Deserved[r] && f.resources[r] < v {
			out = append(out, dim{name: string(r), allocated: u.Allocated[r], deserved: u.Deserved[r]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].cards != out[j].cards {
			return out[i].cards
		}
		return out[i].name < out[j].name
	})
	return out
}

// above tells whether a queue uses more than its deserved share of any of
// dims, those its queue is short of: only there is there anything to settle.
func above(u state.Usage, dims []dim) bool {
	for _, d := range dims {
		if d.cards {
			if c := u.Cards[d.name]; c.Allocated > c.Deserved {
				return true
			}
		} else if r := corev1.ResourceName(d.name); u.Allocated[r] > u.Deserved[r] {
			return true
		}
	}
	return false
}

// reclaimFrom is the queues pre may reclaim from, with whether each is
// reclaimable: those above their deserved share of what pre's queue is
// short of.
func reclaimFrom(pre state.Preemptor, usage map[string]state.Usage, short []dim) map[string]bool {
	out := map[string]bool{}
	if len(short) == 0 {
		return out
	}
	for name, u := range usage {
		if name != pre.Queue && u.Exists && above(u, short) {
			out[name] = u.Reclaimable
		}
	}
	return out
}

// atShare tells whether evicting pods, of one queue (usage u), would
// alone take that queue below its deserved share of something guard
// settles, so that guard would refuse any plan that takes them: a card
// model or resource the preemptor's queue is short of (short), or, for
// pods that hold no cards of a short model (they can only make room the
// preemptor's members land in), a card model those members may use
// (models). They are left out of the plan from the start: of a queue above
// its share of one model and at it on another, only the first is taken.
func atShare(u state.Usage, pods []state.PodView, models map[string]bool, short []dim) bool {
	cards, req := map[string]int64{}, quota.Resources{}
	for _, p := range pods {
		for m, n := range p.Cards {
			cards[m] += n
		}
		req.Add(p.Request)
	}
	shortModel := map[string]bool{}
	holdsShort := false
	for _, d := range short {
		if d.cards {
			shortModel[d.name] = true
			holdsShort = holdsShort || cards[d.name] > 0
		}
	}
	for m, n := range cards {
		if c := u.Cards[m]; n > 0 && (shortModel[m] || models[m] && !holdsShort) && c.Allocated-n < c.Deserved {
			return true
		}
	}
	for _, d := range short {
		if r := corev1.ResourceName(d.name); !d.cards && req[r] > 0 && u.Allocated[r]-req[r] < u.Deserved[r] {
			return true
		}
	}
	return false
}

// guard checks a plan's reclaim after it, in each resource or card model
// the preemptor's queue is short of (short), and in each card model its
// members land on and the plan takes cards of from other queues: the
// preemptor's queue is then not
// above its deserved share, and no queue it takes from is below its own
// (SPEC §5.6). A gang that may use several models is short of one (its
// queue below its share there) and could free room on another, where its
// queue already has its share: taking cards there would be borrowing by
// eviction, which the queue robbed then reclaims back. Elsewhere (a
// resource nobody lacks, whose deserved share is what each queue asks)
// there is nothing to settle. A plan that takes nothing from other queues
// passes.
func guard(pre state.Preemptor, usage map[string]state.Usage, members []*member, evicted []*unit, short []dim,
	nodeCards func(node string, pod *corev1.Pod) map[string]int64) string {
	change := map[string]map[dim]int64{} // queue -> dim -> change of its allocation
	add := func(q string, d dim, v int64) {
		if change[q] == nil {
			change[q] = map[dim]int64{}
		}
		change[q][d] += v
	}
	key := func(d dim) dim { return dim{name: d.name, cards: d.cards} }
	reclaims := false
	// freed are the cards, by model, the plan takes from other queues;
	// landed the cards the preemptor's members take, by model.
	freed, landed := map[string]int64{}, map[string]int64{}
	for _, u := range evicted {
		reclaims = reclaims || u.reclaim
		if u.queue == pre.Queue {
			continue
		}
		for _, p := range u.pods {
			for m, n := range p.Cards {
				freed[m] += n
			}
		}
	}
	if !reclaims {
		return ""
	}
	memberCards := make([]map[string]int64, len(members))
	for i, m := range members {
		memberCards[i] = nodeCards(m.node, m.pod)
		for model, n := range memberCards[i] {
			landed[model] += n
		}
	}
	// A model the members land on and the plan takes from other queues,
	// beyond those the queue is short of, is settled too: there the
	// preemptor's queue gains what it takes (at most what it lands), and
	// the queues it takes from lose it. A model only the victims hold is
	// not: the preemptor gains nothing there to be taken back.
	extra := map[dim]bool{}
	for m := range freed {
		if d := (dim{name: m, cards: true}); landed[m] > 0 && !slices.ContainsFunc(short, func(x dim) bool { return key(x) == d }) {
			extra[d] = true
		}
	}
	for _, u := range evicted {
		for _, p := range u.pods {
			for _, d := range short {
				add(u.queue, key(d), -amount(d, p.Request, p.Cards))
			}
			for d := range extra {
				if u.queue != pre.Queue {
					add(u.queue, d, -p.Cards[d.name])
				}
			}
		}
	}
	for i, m := range members {
		req := quota.PodRequests(m.pod)
		for _, d := range short {
			add(pre.Queue, key(d), amount(d, req, memberCards[i]))
		}
	}
	for d := range extra {
		add(pre.Queue, d, min(landed[d.name], freed[d.name]))
	}
	for q, byDim := range change {
		u := usage[q]
		for d, v := range byDim {
			alloc, deserved := u.Allocated[corev1.ResourceName(d.name)], u.Deserved[corev1.ResourceName(d.name)]
			if d.cards {
				alloc, deserved = u.Cards[d.name].Allocated, u.Cards[d.name].Deserved
			}
			after := dim{name: d.name, cards: d.cards, allocated: alloc + v, deserved: deserved}
			switch {
			case q == pre.Queue && v > 0 && after.allocated > deserved:
				return fmt.Sprintf("queue %s would be above its deserved %s", q, after)
			case q != pre.Queue && v < 0 && after.allocated < deserved:
				return fmt.Sprintf("queue %s would fall below its deserved %s", q, after)
			}
		}
	}
	return ""
}

// amount is how much of d a pod's request and cards are.
func amount(d dim, req quota.Resources, cards map[string]int64) int64 {
	if d.cards {
		return cards[d.name]
	}
	return req[corev1.ResourceName(d.name)]
}
