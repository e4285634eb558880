// Package queuecache is the one place where queue usage lives: each queue's
// guarantee, capability, weight and card quota, and what its pods use,
// keyed by pod UID, in resources and in cards of each model. Informer
// events (binds, deletions, completions) and Reserve/Unreserve all land here
// through idempotent add/remove, so nothing is counted twice or lost, and
// the numbers rebuild from the cluster after a restart.
//
// A placed pod is charged cards of the model of the node it is on (SPEC
// §4.1), so the cache also keeps each node's card models (nodes.go), fed
// by the node informer and read by Filter without detecting anything.
//
// One lock guards everything. Methods ending in Locked expect it held. No
// API call and no lister call is made under it.
package queuecache

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
)

// Usage is a copy of one queue's numbers.
type Usage struct {
	Name        string
	Exists      bool
	Weight      int32
	Reclaimable bool
	Guarantee   quota.Resources
	Capability  quota.Resources
	// Allocated is what bound and reserved pods use.
	Allocated quota.Resources
	// NonPreemptible is the part of Allocated used by non-preemptible pods.
	NonPreemptible quota.Resources
	// Pending is what pods not yet placed ask for.
	Pending quota.Resources
	// Cards is the quota and use of each card model the queue lists or uses.
	Cards map[string]CardUsage
}

// PodInfo is what the cache records of a pod.
type PodInfo struct {
	Queue string
	// Request is what the pod is charged.
	Request quota.Resources
	// NonPreemptible pods may use only the queue's guarantee (SPEC §3.5).
	NonPreemptible bool
	Gang           gang.Key
}

type podEntry struct {
	PodInfo
	pod *corev1.Pod
	// node is where the pod is bound or reserved; "" while it is pending.
	node string
	// cards is what the pod is charged in cards of each model, once placed.
	cards map[string]int64
}

func (e *podEntry) placed() bool { return e.node != "" }

type queueState struct {
	spec           *v1alpha1.Queue
	guarantee      quota.Resources
	capability     quota.Resources
	allocated      quota.Resources
	nonPreemptible quota.Resources
	pending        quota.Resources
	cards          map[string]*CardUsage
}

// Cache holds every queue's usage.
type Cache struct {
	mu     sync.RWMutex
	queues map[string]*queueState
	pods   map[types.UID]*podEntry
	// gangPlaced counts each gang's placed pods.
	gangPlaced map[gang.Key]int
	// inNamespace indexes pods by namespace.
	inNamespace map[string]map[types.UID]*podEntry
	// nodes are the card models of each node; podsOn indexes placed pods by node.
	nodes  map[string]cardmodel.Node
	podsOn map[string]map[types.UID]*podEntry
	// nodeReads mirrors nodes for lock-free reads by Filter and Score;
	// written only under mu, alongside nodes.
	nodeReads sync.Map
	// cardResources are resources some node carries as cards, beyond the
	// well-known ones.
	cardResources map[corev1.ResourceName]bool
	// cardUnlimitedCPUMemory: pods that use cards are not charged cpu/memory.
	cardUnlimitedCPUMemory bool
	// sources are the informer handlers that feed the cache.
	sources []func() bool
	synced  atomic.Bool
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{
		queues: map[string]*queueState{}, pods: map[types.UID]*podEntry{}, gangPlaced: map[gang.Key]int{}, inNamespace: map[string]map[types.UID]*podEntry{},
		nodes: map[string]cardmodel.Node{}, podsOn: map[string]map[types.UID]*podEntry{}, cardResources: map[corev1.ResourceName]bool{},
	}
}

func (c *Cache) queueLocked(name string) *queueState {
	q := c.queues[name]
	if q == nil {
		q = &queueState{allocated: quota.Resources{}, nonPreemptible: quota.Resources{}, pending: quota.Resources{}, cards: map[string]*CardUsage{}}
		c.queues[name] = q
	}
	return q
}

// UpsertQueue records a Queue's spec and card quota. An invalid
// volcano.sh/card.quota annotation is returned as an error for the caller
// to report; spec.cards is recorded all the same.
func (c *Cache) UpsertQueue(q *v1alpha1.Queue) error {
	cards, err := cardmodel.QueueCards(q)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.queueLocked(q.Name)
	s.spec = q
	s.guarantee = quota.FromList(q.Spec.Guarantee)
	s.capability = quota.FromList(q.Spec.Capability)
	setCardQuotaLocked(s, cards)
	return err
}

// DeleteQueue forgets a Queue's spec; what its pods use is kept, so it is
// right again if the Queue comes back.
func (c *Cache) DeleteQueue(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.queues[name]; s != nil {
		s.spec, s.guarantee, s.capability = nil, nil, nil
		setCardQuotaLocked(s, nil)
	}
}

// AddPodIfAbsent records a pod as placed (bound or reserved) on node, or
// pending when node is "", replacing whatever was recorded for its UID:
// calling it again with the same pod changes nothing. A placed pod is
// charged cards of its node's models. A pod recorded as placed stays placed
// where it was (only Unplace and RemovePodIfPresent take that back: an
// informer update that arrives between Reserve and bind must not drop the
// reservation), and keeps the NonPreemptible decision it was reserved with.
func (c *Cache) AddPodIfAbsent(pod *corev1.Pod, info PodInfo, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldCards map[string]int64
	if old := c.pods[pod.UID]; old != nil {
		if old.placed() {
			node = old.node
			info.NonPreemptible = old.NonPreemptible
			oldCards = old.cards
		}
		c.removeLocked(old)
	}
	e := &podEntry{PodInfo: info, pod: pod, node: node}
	if node != "" {
		e.cards = c.cardsLocked(e, oldCards)
	}
	c.pods[pod.UID] = e
	c.addLocked(e)
	in := c.inNamespace[pod.Namespace]
	if in == nil {
		in = map[types.UID]*podEntry{}
		c.inNamespace[pod.Namespace] = in
	}
	in[pod.UID] = e
}

// UpdatePodIfPresent records a pod's info anew, where it is placed or
// pending, only if the pod is still recorded: a pod deleted meanwhile is
// not brought back.
func (c *Cache) UpdatePodIfPresent(pod *corev1.Pod, info PodInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.pods[pod.UID]
	if old == nil {
		return
	}
	c.removeLocked(old)
	if old.placed() {
		info.NonPreemptible = old.NonPreemptible
	}
	old.PodInfo = info
	c.addLocked(old)
}

// PodsIn lists the pods recorded in a namespace.
func (c *Cache) PodsIn(namespace string) []*corev1.Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*corev1.Pod, 0, len(c.inNamespace[namespace]))
	for _, e := range c.inNamespace[namespace] {
		out = append(out, e.pod)
	}
	return out
}

// RemovePodIfPresent forgets a pod; calling it again changes nothing.
func (c *Cache) RemovePodIfPresent(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.pods[uid]; old != nil {
		c.removeLocked(old)
		delete(c.pods, uid)
		if in := c.inNamespace[old.pod.Namespace]; in != nil {
			delete(in, uid)
			if len(in) == 0 {
				delete(c.inNamespace, old.pod.Namespace)
			}
		}
	}
}

// Unplace marks a reserved pod pending again (Unreserve), if it is placed,
// giving back exactly the resources and cards it was charged.
func (c *Cache) Unplace(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.pods[uid]; e != nil && e.placed() {
		c.removeLocked(e)
		e.node, e.cards = "", nil
		c.addLocked(e)
	}
}

func (c *Cache) addLocked(e *podEntry) {
	q := c.queueLocked(e.Queue)
	if !e.placed() {
		q.pending.Add(e.Request)
		return
	}
	q.allocated.Add(e.Request)
	if e.NonPreemptible {
		q.nonPreemptible.Add(e.Request)
	}
	for model, n := range e.cards {
		u := q.card(model)
		u.Allocated += n
		if e.NonPreemptible {
			u.NonPreemptible += n
		}
	}
	if e.Gang != "" {
		c.gangPlaced[e.Gang]++
	}
	on := c.podsOn[e.node]
	if on == nil {
		on = map[types.UID]*podEntry{}
		c.podsOn[e.node] = on
	}
	on[e.pod.UID] = e
}

func (c *Cache) removeLocked(e *podEntry) {
	q := c.queueLocked(e.Queue)
	if !e.placed() {
		q.pending.Sub(e.Request)
		return
	}
	q.allocated.Sub(e.Request)
	if e.NonPreemptible {
		q.nonPreemptible.Sub(e.Request)
	}
	for model, n := range e.cards {
		u := q.card(model)
		u.Allocated -= n
		if e.NonPreemptible {
			u.NonPreemptible -= n
		}
		if u.Allocated == 0 && !u.Listed {
			delete(q.cards, model)
		}
	}
	if e.Gang != "" {
		if c.gangPlaced[e.Gang]--; c.gangPlaced[e.Gang] <= 0 {
			delete(c.gangPlaced, e.Gang)
		}
	}
	if on := c.podsOn[e.node]; on != nil {
		delete(on, e.pod.UID)
		if len(on) == 0 {
			delete(c.podsOn, e.node)
		}
	}
}

// Pod returns what is recorded of a pod: what it is charged, the cards it
// is charged (when placed), whether it is placed, and whether it is known.
func (c *Cache) Pod(uid types.UID) (PodInfo, map[string]int64, bool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.pods[uid]; e != nil {
		return e.PodInfo, e.cards, e.placed(), true
	}
	return PodInfo{}, nil, false, false
}

// Usage returns a copy of a queue's numbers.
func (c *Cache) Usage(name string) Usage {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.usageLocked(name)
}

func (c *Cache) usageLocked(name string) Usage {
	u := Usage{Name: name, Allocated: quota.Resources{}, NonPreemptible: quota.Resources{}, Pending: quota.Resources{}}
	s := c.queues[name]
	if s == nil {
		return u
	}
	u.Allocated, u.NonPreemptible, u.Pending = s.allocated.Clone(), s.nonPreemptible.Clone(), s.pending.Clone()
	u.Cards = cardsCopy(s)
	if s.spec != nil {
		u.Exists = true
		u.Weight = max(s.spec.Spec.Weight, 1)
		u.Reclaimable = ptr.Deref(s.spec.Spec.Reclaimable, true)
		u.Guarantee, u.Capability = s.guarantee.Clone(), s.capability.Clone()
	}
	return u
}

// All returns a copy of every known queue's numbers.
func (c *Cache) All() []Usage {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Usage, 0, len(c.queues))
	for name := range c.queues {
		out = append(out, c.usageLocked(name))
	}
	return out
}

// GangPlaced counts a gang's placed pods.
func (c *Cache) GangPlaced(k gang.Key) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gangPlaced[k]
}
