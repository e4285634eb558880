package state

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
)

// CardUsage is a queue's quota and use of one card model, in cards.
type CardUsage struct {
	// Listed is false for a model the queue has no quota for (it may still
	// be in use, after the Queue was edited): it may not be used.
	Listed                bool
	Guarantee, Capability int64
	// Allocated is what bound and reserved pods use.
	Allocated int64
	// NonPreemptible and Elastic are the parts of Allocated used by
	// non-preemptible pods and by elastic pods.
	NonPreemptible, Elastic int64
	// Pending is what pods not yet placed that name this model ask for.
	Pending int64
	// Deserved is the queue's fair share of this model (SPEC §3.2).
	Deserved int64
}

// queueEntry is what the state knows of one queue: its spec, and the sums
// of its pods' charges (pods.go keeps them exact).
type queueEntry struct {
	// spec is the Queue as last delivered by the informer; nil when it does not exist.
	spec                  *v1alpha1.Queue
	guarantee, capability quota.Resources
	// allocated is what bound and reserved pods use; nonPreemptible and
	// elastic are the parts of it used by non-preemptible and by elastic pods.
	allocated, nonPreemptible, elastic quota.Resources
	// pending is what pods not yet placed ask for.
	pending quota.Resources
	// pendingCardsAny is what pending pods that name no model ask for, by resource.
	pendingCardsAny map[corev1.ResourceName]int64
	cards           map[string]*CardUsage
	// placed are the queue's placed pods, by UID: preemption's victims.
	placed map[types.UID]*podEntry
	// selector is its namespaceSelector, nil when every namespace may use
	// it; selectorText the same in words, for events.
	selector     labels.Selector
	selectorText string
}

// queue is the entry of queue name, made when first needed.
func (b *books) queue(name string) *queueEntry {
	q := b.queues[name]
	if q == nil {
		q = &queueEntry{
			allocated: quota.Resources{}, nonPreemptible: quota.Resources{}, elastic: quota.Resources{}, pending: quota.Resources{},
			pendingCardsAny: map[corev1.ResourceName]int64{}, cards: map[string]*CardUsage{}, placed: map[types.UID]*podEntry{},
		}
		b.queues[name] = q
	}
	return q
}

// charge adds (sign 1) or removes (sign -1) what pod e counts for in the
// queue: a pending pod its demand, a placed pod its allocation, with the
// non-preemptible and elastic parts of it, in resources and in cards. It
// tells whether the queue's numbers changed: a pod whose namespace may
// not use the queue is charged nowhere.
func (q *queueEntry) charge(e *podEntry, sign int64) bool {
	add := func(r quota.Resources) {
		if sign > 0 {
			r.Add(e.Request)
		} else {
			r.Sub(e.Request)
		}
	}
	if e.Denied != nil {
		// Never charged to a queue its namespace may not use: a pending
		// pod waits, one bound there by another way is charged nowhere.
		return false
	}
	if !e.placed() {
		add(q.pending)
		for r, n := range e.CardRequests {
			if len(e.CardNames) == 0 {
				q.pendingCardsAny[r] += sign * n
				if q.pendingCardsAny[r] == 0 {
					delete(q.pendingCardsAny, r)
				}
				continue
			}
			for _, m := range e.CardNames {
				if cardmodel.Matches(m, r) {
					c := q.card(m)
					c.Pending += sign * n
					q.dropCardIfUnused(m)
				}
			}
		}
		return true
	}
	if sign > 0 {
		q.placed[e.pod.UID] = e
	} else {
		delete(q.placed, e.pod.UID)
	}
	nonPreemptible := e.nonPreemptible()
	add(q.allocated)
	if nonPreemptible {
		add(q.nonPreemptible)
	}
	if e.elastic {
		add(q.elastic)
	}
	for m, n := range e.cards {
		c := q.card(m)
		c.Allocated += sign * n
		if nonPreemptible {
			c.NonPreemptible += sign * n
		}
		if e.elastic {
			c.Elastic += sign * n
		}
		q.dropCardIfUnused(m)
	}
	return true
}

func (q *queueEntry) card(model string) *CardUsage {
	c := q.cards[model]
	if c == nil {
		c = &CardUsage{}
		q.cards[model] = c
	}
	return c
}

// dropQueueIfUnusedLocked forgets a queue no Queue defines and no pod uses
// (a queue a pod named by mistake, say), so the state does not grow with
// every name ever seen.
func (s *State) dropQueueIfUnusedLocked(name string) {
	if q := s.books.queues[name]; q != nil && q.unused() {
		delete(s.books.queues, name)
		s.notifyLocked()
	}
}

// unused: no Queue defines it and no pod uses it.
func (q *queueEntry) unused() bool {
	return q.spec == nil && len(q.allocated) == 0 && len(q.pending) == 0 &&
		len(q.pendingCardsAny) == 0 && len(q.cards) == 0 && len(q.placed) == 0
}

// dropCardIfUnused forgets a model the queue neither lists nor uses.
func (q *queueEntry) dropCardIfUnused(model string) {
	if c := q.cards[model]; c != nil && !c.Listed && c.Allocated == 0 && c.Pending == 0 {
		delete(q.cards, model)
	}
}

// upsertQueueLocked records a Queue's spec and card quota. An invalid
// volcano.sh/card.quota annotation is returned for the caller to report;
// spec.cards is recorded all the same.
func (s *State) upsertQueueLocked(obj *v1alpha1.Queue) error {
	cards, err := cardmodel.QueueCards(obj)
	q := s.books.queue(obj.Name)
	if old := q.spec; old == nil || old.Generation != obj.Generation ||
		old.Annotations[v1alpha1.VolcanoCardQuotaAnnotation] != obj.Annotations[v1alpha1.VolcanoCardQuotaAnnotation] {
		s.roomFreedLocked(obj.Name)
	}
	old := q.spec
	q.spec = obj
	if old == nil || !apiequality.Semantic.DeepEqual(old.Spec.NamespaceSelector, obj.Spec.NamespaceSelector) {
		selected := q.selector != nil
		s.setSelectorLocked(q, obj)
		if selected || q.selector != nil {
			// Some namespace may use it now, or no longer: its pending
			// pods are judged anew. A Queue added for every namespace,
			// the common case, walks nothing.
			s.rederivePendingFactsLocked(obj.Name)
		}
	}
	q.guarantee = quota.FromList(obj.Spec.Guarantee)
	q.capability = quota.FromList(obj.Spec.Capability)
	q.setCardQuota(cards)
	s.notifyLocked()
	return err
}

// deleteQueueLocked forgets a Queue's spec; what its pods use is kept, so
// it is right again if the Queue comes back.
func (s *State) deleteQueueLocked(name string) {
	if q := s.books.queues[name]; q != nil {
		q.spec, q.guarantee, q.capability = nil, nil, nil
		selected := q.selector != nil
		q.selector, q.selectorText = nil, ""
		q.setCardQuota(nil)
		if selected {
			s.rederivePendingFactsLocked(name)
		}
		s.notifyLocked()
		s.dropQueueIfUnusedLocked(name)
	}
}

// setCardQuota replaces a queue's card quota, keeping what its pods use.
func (q *queueEntry) setCardQuota(cards map[string]cardmodel.Quota) {
	for model, c := range q.cards {
		if _, ok := cards[model]; !ok {
			c.Listed, c.Guarantee, c.Capability = false, 0, 0
			q.dropCardIfUnused(model)
		}
	}
	for model, quota := range cards {
		c := q.card(model)
		c.Listed, c.Guarantee, c.Capability = true, quota.Guarantee, quota.Capability
	}
}

// Usage is a copy of one queue's numbers.
type Usage struct {
	Name string
	// Exists is false for a queue pods name but no Queue object defines.
	Exists      bool
	Weight      int32
	Reclaimable bool
	Guarantee   quota.Resources
	// Capability caps the resources it lists; others are not capped.
	Capability quota.Resources
	// Allocated is what bound and reserved pods use; NonPreemptible and
	// Elastic are the parts of it used by non-preemptible and elastic pods.
	Allocated, NonPreemptible, Elastic quota.Resources
	// Pending is what pods not yet placed ask for.
	Pending quota.Resources
	// Deserved is its fair share (SPEC §3.2).
	Deserved quota.Resources
	// Cards is the quota and use of each card model it lists or uses.
	Cards map[string]CardUsage
}

// Usage returns a copy of a queue's numbers, deserved share included.
func (s *State) Usage(name string) Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshDeservedLocked()
	return s.usageLocked(name, true)
}

// QuotaUsage returns a copy of a queue's numbers without its deserved
// share: what the quota plugins' PreFilter needs, cheaply.
func (s *State) QuotaUsage(name string) Usage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.usageLocked(name, false)
}

func (s *State) usageLocked(name string, withDeserved bool) Usage {
	u := Usage{Name: name, Allocated: quota.Resources{}, NonPreemptible: quota.Resources{}, Elastic: quota.Resources{}, Pending: quota.Resources{}, Cards: map[string]CardUsage{}}
	q := s.books.queues[name]
	if q == nil {
		u.Exists = s.defaultQueueStandsInLocked(name)
		return u
	}
	u.Allocated, u.NonPreemptible, u.Elastic, u.Pending = q.allocated.Clone(), q.nonPreemptible.Clone(), q.elastic.Clone(), q.pending.Clone()
	for m, c := range q.cards {
		u.Cards[m] = *c
	}
	if withDeserved {
		u.Deserved = s.books.deserved.resources[name].Clone()
		for m, c := range u.Cards {
			c.Deserved = s.books.deserved.cards[name][m]
			u.Cards[m] = c
		}
	}
	if q.spec != nil {
		u.Exists = true
		u.Weight = max(q.spec.Spec.Weight, 1)
		u.Reclaimable = ptr.Deref(q.spec.Spec.Reclaimable, true)
		u.Guarantee, u.Capability = q.guarantee.Clone(), q.capability.Clone()
	} else if s.defaultQueueStandsInLocked(name) {
		u.Exists, u.Weight, u.Reclaimable = true, 1, true
	}
	return u
}

// Cards returns a copy of a queue's card quota and use.
func (s *State) Cards(name string) map[string]CardUsage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]CardUsage{}
	if q := s.books.queues[name]; q != nil {
		for m, c := range q.cards {
			out[m] = *c
		}
	}
	return out
}

// QueueStatus is what Queue status is written from: the Queue as the
// informer delivered it and the scheduler's own numbers for it.
type QueueStatus struct {
	Queue *v1alpha1.Queue
	Usage Usage
}

// QueueStatuses returns, for every Queue that exists, the numbers the
// scheduler decides with, deserved shares freshly computed, so that status
// may lag the scheduler but never disagree with it (SPEC §3.2).
func (s *State) QueueStatuses() []QueueStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshDeservedLocked()
	out := make([]QueueStatus, 0, len(s.books.queues))
	for name, q := range s.books.queues {
		if q.spec != nil {
			out = append(out, QueueStatus{Queue: q.spec, Usage: s.usageLocked(name, true)})
		}
	}
	return out
}

// Capacity is what the cluster's nodes have allocatable, per resource and
// in cards of each model.
func (s *State) Capacity() (quota.Resources, map[string]int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	cards := make(map[string]int64, len(s.books.cardCapacity))
	for m, n := range s.books.cardCapacity {
		cards[m] = n
	}
	return s.books.capacity.Clone(), cards
}
