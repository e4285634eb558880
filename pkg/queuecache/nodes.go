package queuecache

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
)

// UpsertNode records a node's card models, detected once here and never per
// Filter call, and returns them. Pods placed on the node are charged again
// for its models: a relabelled node moves their cards to the new model
// name. A pod whose cards the node no longer carries at all (the node was
// re-sliced under it) keeps what it was charged until it goes: it still
// holds those cards. changed is false when the models are as before, as
// for most node updates (status heartbeats), which then cost nothing more.
func (c *Cache) UpsertNode(node *corev1.Node) (detected cardmodel.Node, changed bool) {
	detected = cardmodel.Detect(node)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.nodes[node.Name]; ok && old.Equal(detected) {
		return detected, false
	}
	c.nodes[node.Name] = detected
	c.nodeReads.Store(node.Name, detected)
	for _, card := range detected.Cards {
		c.cardResources[card.Resource] = true
	}
	for _, e := range c.podsOn[node.Name] {
		c.removeLocked(e)
		e.cards = c.cardsLocked(e, e.cards)
		c.addLocked(e)
	}
	return detected, true
}

// DeleteNode forgets a node's card models. Pods still recorded on it keep
// their charge until they are deleted: nothing charged is lost.
func (c *Cache) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
	c.nodeReads.Delete(name)
}

// Node returns a node's card models as last detected. It takes no lock:
// Filter and Score call it for every node from parallel goroutines, where
// even a read lock's shared counter showed in profiles.
func (c *Cache) Node(name string) (cardmodel.Node, bool) {
	v, ok := c.nodeReads.Load(name)
	if !ok {
		return cardmodel.Node{}, false
	}
	return v.(cardmodel.Node), true
}

// IsCardResource tells whether a pod's request of resource uses cards: a
// well-known card resource, or one some node carries under a product label.
func (c *Cache) IsCardResource(name corev1.ResourceName) bool {
	if cardmodel.IsCardResource(name) {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cardResources[name]
}

// cardsLocked is what a placed pod is charged in cards on its node; when the
// node is unknown or carries none of the pod's cards, the pod keeps old.
func (c *Cache) cardsLocked(e *podEntry, old map[string]int64) map[string]int64 {
	if n, ok := c.nodes[e.node]; ok {
		if cards := n.PodCards(e.pod); len(cards) > 0 {
			return cards
		}
	}
	return old
}

// SetCardUnlimitedCPUMemory sets whether pods that use cards are charged
// cpu and memory (the card quota plugin's cardUnlimitedCpuMemory). It is set
// once, when the plugins are built, before any pod is charged.
func (c *Cache) SetCardUnlimitedCPUMemory(v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cardUnlimitedCPUMemory = v
}

// Request is what a pod is charged in resources: what it asks for, without
// cpu and memory if it uses cards and cardUnlimitedCpuMemory is set.
func (c *Cache) Request(pod *corev1.Pod) quota.Resources {
	r := quota.PodRequests(pod)
	c.mu.RLock()
	unlimited := c.cardUnlimitedCPUMemory
	c.mu.RUnlock()
	if !unlimited {
		return r
	}
	for name := range r {
		if c.IsCardResource(name) {
			delete(r, corev1.ResourceCPU)
			delete(r, corev1.ResourceMemory)
			break
		}
	}
	return r
}

// AddSource registers an informer handler that feeds the cache; Synced is
// false until every registered one has delivered its initial list, so that
// no decision is made on counts still being rebuilt after a restart.
func (c *Cache) AddSource(hasSynced func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, hasSynced)
}

// Synced tells whether every source has delivered its initial list. Once
// true it stays true and costs one atomic load.
func (c *Cache) Synced() bool {
	if c.synced.Load() {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.sources {
		if !s() {
			return false
		}
	}
	c.synced.Store(true)
	return true
}

// syncWaitForAdmission bounds how long gang admission (PreEnqueue, called
// from the scheduler's own informer handlers) waits for the cache at start.
const syncWaitForAdmission = 5 * time.Second

// SyncedForAdmission waits, a bounded time, until Synced: gang admission
// just after a start then judges complete counts. If the cache is still not
// synced it says false, and the gang is admitted and checked pod by pod.
func (c *Cache) SyncedForAdmission(ctx context.Context) bool {
	if c.Synced() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, syncWaitForAdmission)
	defer cancel()
	return c.WaitForSync(ctx) == nil
}

// WaitForSync waits until Synced, polling, or until ctx ends.
func (c *Cache) WaitForSync(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return c.Synced(), nil
	})
}
