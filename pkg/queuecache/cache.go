// Package queuecache is the one place where queue usage lives: each queue's
// guarantee, capability and weight, and what its pods use, keyed by pod UID.
// Informer events (binds, deletions, completions) and Reserve/Unreserve all
// land here through idempotent add/remove, so nothing is counted twice or
// lost, and the numbers rebuild from the cluster after a restart.
//
// One lock guards everything. Methods ending in Locked expect it held. No
// API call and no lister call is made under it.
package queuecache

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
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
	pod    *corev1.Pod
	placed bool
}

type queueState struct {
	spec           *v1alpha1.Queue
	guarantee      quota.Resources
	capability     quota.Resources
	allocated      quota.Resources
	nonPreemptible quota.Resources
	pending        quota.Resources
}

// Cache holds every queue's usage.
type Cache struct {
	mu     sync.RWMutex
	queues map[string]*queueState
	pods   map[types.UID]*podEntry
	// gangPlaced counts each gang's placed pods.
	gangPlaced map[gang.Key]int
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{queues: map[string]*queueState{}, pods: map[types.UID]*podEntry{}, gangPlaced: map[gang.Key]int{}}
}

func (c *Cache) queueLocked(name string) *queueState {
	q := c.queues[name]
	if q == nil {
		q = &queueState{allocated: quota.Resources{}, nonPreemptible: quota.Resources{}, pending: quota.Resources{}}
		c.queues[name] = q
	}
	return q
}

// UpsertQueue records a Queue's spec.
func (c *Cache) UpsertQueue(q *v1alpha1.Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.queueLocked(q.Name)
	s.spec = q
	s.guarantee = quota.FromList(q.Spec.Guarantee)
	s.capability = quota.FromList(q.Spec.Capability)
}

// DeleteQueue forgets a Queue's spec; what its pods use is kept, so it is
// right again if the Queue comes back.
func (c *Cache) DeleteQueue(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.queues[name]; s != nil {
		s.spec, s.guarantee, s.capability = nil, nil, nil
	}
}

// AddPodIfAbsent records a pod as placed (bound or reserved) or pending,
// replacing whatever was recorded for its UID: calling it again with the
// same pod changes nothing. A pod recorded as placed stays placed (only
// Unplace and RemovePodIfPresent take that back: an informer update that
// arrives between Reserve and bind must not drop the reservation), and keeps
// the NonPreemptible decision it was reserved with.
func (c *Cache) AddPodIfAbsent(pod *corev1.Pod, info PodInfo, placed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.pods[pod.UID]; old != nil {
		if old.placed {
			placed = true
			info.NonPreemptible = old.NonPreemptible
		}
		c.removeLocked(old)
	}
	e := &podEntry{PodInfo: info, pod: pod, placed: placed}
	c.pods[pod.UID] = e
	c.addLocked(e)
}

// RemovePodIfPresent forgets a pod; calling it again changes nothing.
func (c *Cache) RemovePodIfPresent(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.pods[uid]; old != nil {
		c.removeLocked(old)
		delete(c.pods, uid)
	}
}

// Unplace marks a reserved pod pending again (Unreserve), if it is placed.
func (c *Cache) Unplace(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.pods[uid]; e != nil && e.placed {
		c.removeLocked(e)
		e.placed = false
		c.addLocked(e)
	}
}

func (c *Cache) addLocked(e *podEntry) {
	q := c.queueLocked(e.Queue)
	if !e.placed {
		q.pending.Add(e.Request)
		return
	}
	q.allocated.Add(e.Request)
	if e.NonPreemptible {
		q.nonPreemptible.Add(e.Request)
	}
	if e.Gang != "" {
		c.gangPlaced[e.Gang]++
	}
}

func (c *Cache) removeLocked(e *podEntry) {
	q := c.queueLocked(e.Queue)
	if !e.placed {
		q.pending.Sub(e.Request)
		return
	}
	q.allocated.Sub(e.Request)
	if e.NonPreemptible {
		q.nonPreemptible.Sub(e.Request)
	}
	if e.Gang != "" {
		if c.gangPlaced[e.Gang]--; c.gangPlaced[e.Gang] <= 0 {
			delete(c.gangPlaced, e.Gang)
		}
	}
}

// Pod returns what is recorded of a pod.
func (c *Cache) Pod(uid types.UID) (PodInfo, bool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e := c.pods[uid]; e != nil {
		return e.PodInfo, e.placed, true
	}
	return PodInfo{}, false, false
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

// ElasticUsage is what the elastic pods of the queue's gangs use: pods placed
// beyond their gang's min, chosen as pkg/gang chooses them. It is counted
// as free when a gang of the same queue asks to be admitted (SPEC §3.4).
// O(placed pods of the queue's gangs); called only when admission would fail.
func (c *Cache) ElasticUsage(queue string, minOf func(gang.Key) int32) quota.Resources {
	c.mu.RLock()
	byGang := map[gang.Key][]*corev1.Pod{}
	req := map[types.UID]quota.Resources{}
	for uid, e := range c.pods {
		if e.placed && e.Queue == queue && e.Gang != "" {
			byGang[e.Gang] = append(byGang[e.Gang], e.pod)
			req[uid] = e.Request
		}
	}
	c.mu.RUnlock()
	out := quota.Resources{}
	for k, pods := range byGang {
		_, elastic := gang.SplitElastic(minOf(k), pods)
		for _, p := range elastic {
			out.Add(req[p.UID])
		}
	}
	return out
}

// GangPlaced counts a gang's placed pods.
func (c *Cache) GangPlaced(k gang.Key) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gangPlaced[k]
}
