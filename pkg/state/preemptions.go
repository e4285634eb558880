package state

import (
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"cardinal.dev/cardinal/pkg/gang"
)

// preemptions are the evictions under way and the room kept for their
// preemptors, the records that keep a second round from starting before
// the first one's victims are gone (claims.go keeps the room).
type preemptions struct {
	// underWay are the preemptions by preemptor key; victimOf and claimOf
	// index their victims and the members room is kept for.
	underWay map[string]*preemption
	victimOf map[types.UID]string
	claimOf  map[types.UID]string
	// unnominated are members whose kept room a sibling took and whose
	// nomination was cleared; a stale nomination that reaches the pod
	// later is cleared again.
	unnominated map[types.UID]struct{}
	// claimReads mirrors the room kept on each node, for Filter to read
	// without the lock; claimNodes counts the nodes in it.
	claimReads sync.Map
	claimNodes atomic.Int64
}

func newPreemptions() preemptions {
	return preemptions{
		underWay:    map[string]*preemption{},
		victimOf:    map[types.UID]string{},
		claimOf:     map[types.UID]string{},
		unnominated: map[types.UID]struct{}{},
	}
}

// preemption is an eviction under way for a preemptor: its victims, until
// they are gone, and the room kept on nodes for its members until they are
// placed.
type preemption struct {
	key string
	// queue is the preemptor's queue when it preempted: the room is made
	// for it (Claim.Queue).
	queue   string
	victims sets.Set[types.UID]
	// claims are, per member, the node its room is kept on.
	claims map[types.UID]Claim
	// used are the claims placed pods of the preemptor took, by the placed
	// pod: given back to the members if it is unreserved.
	used map[types.UID]Claim
	// members are the preemptor's pods, woken when the victims are gone.
	members []*corev1.Pod
	// evicted are the gangs of its victims, each counted once as evicted
	// (gangEntry.evicted).
	evicted sets.Set[gang.Key]
	// deadline ends the preemption even if a victim never goes.
	deadline time.Time
	// gone is when the last victim went; zero while one remains.
	gone time.Time
}

// of is the preemption under way for the preemptor of key
// (State.preemptorKeyOf), if any.
func (p *preemptions) of(key string) *preemption {
	return p.underWay[key]
}

// start records a preemption: its victims and the room kept for its members.
func (p *preemptions) start(pr *preemption) {
	for uid := range pr.victims {
		p.victimOf[uid] = pr.key
	}
	nodes := sets.New[string]()
	for uid, c := range pr.claims {
		p.claimOf[uid] = pr.key
		nodes.Insert(c.Node)
	}
	p.underWay[pr.key] = pr
	for node := range nodes {
		p.publish(node)
	}
}

// end forgets a preemption, its victims and the room it kept.
func (p *preemptions) end(pr *preemption) {
	for uid := range pr.victims {
		delete(p.victimOf, uid)
	}
	for uid := range pr.claims {
		delete(p.claimOf, uid)
	}
	if p.underWay[pr.key] == pr {
		delete(p.underWay, pr.key) // not a newer preemption of the same preemptor
	}
	for _, c := range pr.claims {
		p.publish(c.Node)
	}
}

// victimGone notes that a victim is deleted; it returns the preemption
// whose last victim it was (its members are to be woken), else nil.
func (p *preemptions) victimGone(uid types.UID, now time.Time) *preemption {
	key, ok := p.victimOf[uid]
	if !ok {
		return nil
	}
	delete(p.victimOf, uid)
	pr := p.underWay[key]
	if pr == nil {
		return nil
	}
	pr.victims.Delete(uid)
	if pr.victims.Len() > 0 {
		return nil
	}
	pr.gone = now
	if len(pr.claims) == 0 {
		delete(p.underWay, key)
	}
	return pr
}

// claim keeps room for a member of pr.
func (p *preemptions) claim(pr *preemption, c Claim) {
	pr.claims[c.Pod] = c
	p.claimOf[c.Pod] = pr.key
	p.publish(c.Node)
}

// handOver gives the room kept for member from to member to, in one
// publish: Filter, reading without the lock, never sees the room gone.
func (p *preemptions) handOver(pr *preemption, from, to types.UID) {
	c, ok := pr.claims[from]
	if !ok {
		return
	}
	delete(pr.claims, from)
	delete(p.claimOf, from)
	c.Pod = to
	pr.claims[to] = c
	p.claimOf[to] = pr.key
	p.publish(c.Node)
}

// claimDone drops a member's claim: it was placed, or it is gone. A
// preemption with neither claims nor victims left is over.
func (p *preemptions) claimDone(uid types.UID) {
	key, ok := p.claimOf[uid]
	if !ok {
		return
	}
	delete(p.claimOf, uid)
	pr := p.underWay[key]
	if pr == nil {
		return
	}
	c := pr.claims[uid]
	delete(pr.claims, uid)
	p.publish(c.Node)
	if len(pr.claims) == 0 && pr.victims.Len() == 0 {
		delete(p.underWay, key)
	}
}

// publish rebuilds a node's claims for lock-free reading (on).
func (p *preemptions) publish(node string) {
	var claims []Claim
	for _, pr := range p.underWay {
		for _, c := range pr.claims {
			if c.Node == node {
				claims = append(claims, c)
			}
		}
	}
	if len(claims) == 0 {
		if _, had := p.claimReads.LoadAndDelete(node); had {
			p.claimNodes.Add(-1)
		}
		return
	}
	// Counted before it is stored, so a reader that finds it stored also
	// finds the count above zero.
	p.claimNodes.Add(1)
	if _, had := p.claimReads.Swap(node, claims); had {
		p.claimNodes.Add(-1)
	}
}

// on returns the room kept on a node, without the lock.
func (p *preemptions) on(node string) []Claim {
	if p.claimNodes.Load() == 0 {
		return nil
	}
	if v, ok := p.claimReads.Load(node); ok {
		return v.([]Claim)
	}
	return nil
}
