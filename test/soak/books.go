package soak

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// The invariants of tenancy and of the books (SPEC §1.1, §3.5, §3.7, §5.6,
// §5.8), each judged from the API and from what the run itself did, never
// from Cardinal's own records.

// relabelSlack is how far around a relabel a pod's bind may have been
// decided on either label: the scheduler's informers lag the API.
// Watches cut and lists failed by the proxy, and kube-apiserver restarts,
// can hold an informer back for a while.
const (
	relabelBefore = 3 * time.Second
	relabelAfter  = 30 * time.Second
)

// classOf is the preemptibility a pod was placed with, as the run knows it:
// its workload's, unless the run relabelled the workload's owner and the
// pod was placed after; "" if it was placed too near the relabel to tell.
func (c *checker) classOf(p *corev1.Pod, wl *workload) string {
	if wl.relabelledAt.IsZero() || wl.preemptAfter == "" {
		return wl.preempt
	}
	c.ledger.mu.Lock()
	at, ok := c.ledger.boundAt[p.UID]
	c.ledger.mu.Unlock()
	switch {
	case !ok:
		return ""
	case at.Before(wl.relabelledAt.Add(-relabelBefore)):
		return wl.preempt
	case at.After(wl.relabelledAt.Add(relabelAfter)):
		return wl.preemptAfter
	}
	return ""
}

// denied: no pod is bound, and so charged, to a queue its namespace may not
// use (SPEC §1.1).
func (c *checker) denied(s snapshot) []string {
	var out []string
	for i := range s.pods {
		p := &s.pods[i]
		if wl := c.world.owner(p); wl != nil && wl.denied && p.Spec.NodeName != "" && !c.reported[p.UID] {
			c.reported[p.UID] = true
			out = append(out, fmt.Sprintf("pod %s/%s bound to %s in queue %s, which namespace %s may not use", p.Namespace, p.Name, p.Spec.NodeName, wl.queue, p.Namespace))
		}
	}
	return out
}

// nonPreemptibleUse: no queue's non-preemptible work uses more of a card
// model than the queue's guarantee of it (SPEC §3.5), counting bound pods
// placed non-preemptible, and a semi-preemptible gang's min members
// (as few as its lowest min). Pods placed too near a relabel to tell are
// not counted.
func (c *checker) nonPreemptibleUse(s snapshot) []string {
	use := map[string]map[string]int64{} // queue, model
	semi := map[*workload][]*corev1.Pod{}
	for i := range s.pods {
		p := &s.pods[i]
		wl := c.world.owner(p)
		if !bound(p) || wl == nil {
			continue
		}
		switch c.classOf(p, wl) {
		case v1alpha1.NonPreemptible:
			c.addCards(use, wl.queue, p, 1)
		case v1alpha1.SemiPreemptible:
			semi[wl] = append(semi[wl], p)
		}
	}
	for wl, pods := range semi {
		// Which members are the min is the scheduler's choice: count the
		// fewest cards any min of them could hold, when all share a model.
		n := min(len(pods), wl.lowestMin())
		cards, model := int64(-1), ""
		for _, p := range pods {
			m, k := c.cardsOf(p)
			if model != "" && m != model {
				cards = -1
				break
			}
			model = m
			if cards < 0 || k < cards {
				cards = k
			}
		}
		if cards > 0 && model != "" {
			if use[wl.queue] == nil {
				use[wl.queue] = map[string]int64{}
			}
			use[wl.queue][model] += int64(n) * cards
		}
	}
	var out []string
	for _, q := range c.world.queues {
		quotas := cardQuotas(q)
		for _, m := range sortedKeys(use[q.Name]) {
			if n := use[q.Name][m]; n > quotas[m].guarantee && !c.overGuarantee[q.Name+"/"+m] {
				c.overGuarantee[q.Name+"/"+m] = true // said once
				out = append(out, fmt.Sprintf("queue %s's non-preemptible work uses %d %s cards, guarantee %d: %s", q.Name, n, m, quotas[m].guarantee, c.nonPreemptibleHolders(s, q.Name, m)))
			}
		}
	}
	return out
}

// nonPreemptibleHolders names the bound pods of queue, of model, placed
// non-preemptible or semi-preemptible as the run knows them.
func (c *checker) nonPreemptibleHolders(s snapshot, queue, model string) string {
	var out []string
	for i := range s.pods {
		p := &s.pods[i]
		wl := c.world.owner(p)
		if !bound(p) || wl == nil || wl.queue != queue {
			continue
		}
		if m, _ := c.cardsOf(p); m == model {
			if class := c.classOf(p, wl); class == v1alpha1.NonPreemptible || class == v1alpha1.SemiPreemptible {
				out = append(out, fmt.Sprintf("%s on %s (%s %s)", p.Name, p.Spec.NodeName, wl.kind, class))
			}
		}
	}
	return strings.Join(out, ", ")
}

// addCards adds a pod's cards, by the model it was charged for, to use.
func (c *checker) addCards(use map[string]map[string]int64, queue string, p *corev1.Pod, times int64) {
	m, n := c.cardsOf(p)
	if m == "" || n == 0 {
		return
	}
	if use[queue] == nil {
		use[queue] = map[string]int64{}
	}
	use[queue][m] += n * times
}

// cardsOf is a bound pod's card model and how many cards it is charged.
func (c *checker) cardsOf(p *corev1.Pod) (string, int64) {
	c.ledger.mu.Lock()
	m := c.ledger.model[p.UID]
	c.ledger.mu.Unlock()
	var n int64
	for r, q := range podRequests(p) {
		if r == builder.GPUResource || r == migRes {
			n += q.Value()
		}
	}
	return m, n
}

var reclaimMessage = regexp.MustCompile(`^reclaimed by \S+: queue (\S+) is below its deserved (\S+) share`)

// reclaim is one victim taken by a queue from another.
type reclaim struct {
	by, from, what string
	at             time.Time
	victim         string
}

// changeSlack is how long before a reclaim was seen the scheduler may have
// decided it, on what it knew then.
const changeSlack = 3 * time.Second

// preemption tells whether a DisruptionTarget message is preemption's (a
// preemption or a reclaim), not a stale gang given back.
func preemption(why string) bool {
	return strings.HasPrefix(why, "preempted by ") || strings.HasPrefix(why, "reclaimed by ")
}

// byPreemptor tells whether a DisruptionTarget message names preemptor.
func byPreemptor(why, preemptor string) bool {
	for _, p := range []string{"preempted by ", "reclaimed by "} {
		if rest, ok := strings.CutPrefix(why, p+preemptor); ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " (")) {
			return true
		}
	}
	return false
}

// backAndForth: capacity is not taken back and forth between two queues
// (SPEC §5.6): no reclaim by queue A from queue B of a model follows one by
// B from A of it while nothing the run did changed what queues ask for or
// what the nodes hold.
func (c *checker) backAndForth() []string {
	c.ledger.mu.Lock()
	ts := c.ledger.targets[c.targetsChecked:]
	c.targetsChecked = len(c.ledger.targets)
	c.ledger.mu.Unlock()
	var out []string
	for _, t := range ts {
		m := reclaimMessage.FindStringSubmatch(t.why)
		if m == nil {
			continue
		}
		r := reclaim{by: m[1], from: c.world.queueOf(t.pod), what: m[2], at: t.at, victim: t.pod.Namespace + "/" + t.pod.Name}
		for _, before := range c.reclaims {
			if before.by == r.from && before.from == r.by && before.what == r.what && !c.world.changes.between(before.at.Add(-changeSlack), r.at) {
				out = append(out, fmt.Sprintf("%s went back and forth: queue %s reclaimed %s from %s, then %s reclaimed %s from %s, with nothing changed between",
					r.what, before.by, before.victim, before.from, r.by, r.victim, r.from))
				break
			}
		}
		c.reclaims = append(c.reclaims, r)
	}
	return out
}

// secondRounds: no second round of evictions starts for a preemptor while
// victims of its first terminate (SPEC §5.8). A round starts no later than
// its first victim is marked; a victim of an earlier round seen
// terminating before that and gone only after is one it waited for.
func (c *checker) secondRounds(s snapshot) []string {
	existing := map[string]bool{}
	for i := range s.pods {
		existing[s.pods[i].Namespace+"/"+s.pods[i].Name] = true
	}
	c.ledger.mu.Lock()
	defer c.ledger.mu.Unlock()
	targetedAt, why := map[string]time.Time{}, map[string]string{}
	for _, t := range c.ledger.targets {
		targetedAt[t.pod.Namespace+"/"+t.pod.Name], why[t.pod.Namespace+"/"+t.pod.Name] = t.at, t.why
	}
	start := func(r round) (time.Time, bool) {
		var first time.Time
		for _, v := range r.victims {
			if at, ok := targetedAt[v]; ok && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		return first, !first.IsZero()
	}
	var out []string
	for j, later := range c.ledger.rounds {
		began, ok := start(later)
		if !ok || c.roundsReported[j] {
			continue
		}
		for _, earlier := range c.ledger.rounds {
			if earlier.preemptor != later.preemptor {
				continue
			}
			if b, ok := start(earlier); !ok || !b.Before(began) {
				continue
			}
			for _, v := range earlier.victims {
				// Only a victim evicted for this preemptor, terminating
				// since: one rejected at Permit, or whose eviction failed,
				// may end later for another reason.
				term, ok := c.ledger.terminatingAt[v]
				gone, isGone := c.ledger.goneAt[v]
				if !ok || !byPreemptor(why[v], later.preemptor) || term.Before(targetedAt[v]) || !term.Before(began.Add(-time.Second)) {
					continue
				}
				if isGone && gone.Before(began.Add(time.Second)) || !isGone && !existing[v] {
					continue
				}
				c.roundsReported[j] = true
				out = append(out, fmt.Sprintf("a second round of evictions for %s (%s) began while %s, evicted for it before, was terminating",
					later.preemptor, strings.Join(later.victims, ", "), v))
				break
			}
			if c.roundsReported[j] {
				break
			}
		}
	}
	return out
}

var preemptingMessage = regexp.MustCompile(`for its min of \d+: (.*); its members are nominated`)

// victimsOf reads the victims a Preempting event names; "and N more" are
// left out.
func victimsOf(message string) ([]string, bool) {
	m := preemptingMessage.FindStringSubmatch(message)
	if m == nil {
		return nil, false
	}
	list, _, _ := strings.Cut(m[1], " and ")
	var out []string
	for _, v := range strings.Split(list, ", ") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out, len(out) > 0
}

// preempting records a Preempting event of the run's namespaces.
func (r *runner) preempting(l *ledger, obj any) {
	e, ok := obj.(*corev1.Event)
	if !ok || !strings.HasPrefix(e.Namespace, r.w.run+"-") {
		return
	}
	l.preempting(e)
}

// quotaOf is a queue's guarantee and capability of one card model.
type quotaOf struct{ guarantee, capability int64 }

// cardQuotas is a queue's quota per card model: spec.cards, then the
// Volcano annotation (guarantee = capability) for models it does not list.
func cardQuotas(q *v1alpha1.Queue) map[string]quotaOf {
	out := map[string]quotaOf{}
	for _, c := range q.Spec.Cards {
		out[c.Name] = quotaOf{guarantee: int64(c.Guarantee), capability: int64(c.EffectiveCapability())}
	}
	if a, ok := q.Annotations[v1alpha1.VolcanoCardQuotaAnnotation]; ok {
		var m, n = "", int64(0)
		if _, err := fmt.Sscanf(strings.NewReplacer("{", "", "}", "", `"`, " ", ":", " ").Replace(a), "%s %d", &m, &n); err == nil {
			if _, listed := out[m]; !listed {
				out[m] = quotaOf{guarantee: n, capability: n}
			}
		}
	}
	return out
}
