package state

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
)

// nodeEntry is what the state knows of a node: its card models and what it
// adds to the cluster's capacity.
type nodeEntry struct {
	models      cardmodel.Node
	allocatable quota.Resources
}

// upsertNodeLocked records a node's card models, detected once here and
// never per Filter call, and its allocatable. Pods placed on it are charged
// anew when its models change (a relabel moves their cards to the new
// model name). changed is false when the models are as before, as for most
// node updates (status heartbeats), which then cost little more.
func (s *State) upsertNodeLocked(node *corev1.Node) (detected cardmodel.Node, changed bool) {
	detected = cardmodel.Detect(node)
	alloc := quota.FromList(node.Status.Allocatable)
	delete(alloc, corev1.ResourcePods)
	old := s.books.nodes[node.Name]
	if old != nil && old.models.Equal(detected) {
		if !maps.Equal(old.allocatable, alloc) {
			s.books.nodesGen.Add(1) // which resources go unlabelled may change
			s.books.capacity.Sub(old.allocatable)
			s.books.capacity.Add(alloc)
			s.books.countCarriers(old.allocatable, -1)
			s.books.countCarriers(alloc, 1)
			old.allocatable = alloc
			s.notifyLocked()
		}
		return detected, false
	}
	if old != nil {
		s.books.capacity.Sub(old.allocatable)
		for _, c := range old.models.Cards {
			s.books.addCardCapacity(c.Model, -c.Count)
		}
		s.books.countNodeCards(node.Name, old.models, -1)
		s.books.countCarriers(old.allocatable, -1)
	}
	s.books.countNodeCards(node.Name, detected, 1)
	s.books.countCarriers(alloc, 1)
	s.books.nodes[node.Name] = &nodeEntry{models: detected, allocatable: alloc}
	s.books.nodesGen.Add(1) // NodeViews are made anew on their next read
	s.books.capacity.Add(alloc)
	var learned []corev1.ResourceName
	for _, c := range detected.Cards {
		s.books.addCardCapacity(c.Model, c.Count)
		if !s.books.isCardResource(c.Resource) {
			learned = append(learned, c.Resource)
		}
		s.books.cardResources[c.Resource] = true
	}
	if len(learned) > 0 {
		s.learnedCardResourcesLocked(learned)
	}
	for _, e := range s.books.podsOn[node.Name] {
		s.chargeLocked(e, -1)
		e.cards = s.podCardsLocked(e)
		s.chargeLocked(e, 1)
	}
	s.modelsChangedLocked()
	s.notifyLocked()
	return detected, true
}

// learnedCardResourcesLocked derives anew the facts of pods that request a
// resource first seen as cards (a vendor's accelerator with a product
// label): they now use cards (SPEC §1.4), whenever the node arrived. A new
// kind of card is rare, so the pass over all pods is too.
func (s *State) learnedCardResourcesLocked(resources []corev1.ResourceName) {
	for _, e := range s.books.pods {
		req := quota.PodRequests(e.pod)
		for _, r := range resources {
			if _, asks := req[r]; asks {
				s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
				break
			}
		}
	}
}

// deleteNodeLocked forgets a node. Pods still placed on it keep their
// charge until they are deleted: nothing charged is lost.
func (s *State) deleteNodeLocked(name string) {
	old := s.books.nodes[name]
	if old == nil {
		return
	}
	s.books.capacity.Sub(old.allocatable)
	for _, c := range old.models.Cards {
		s.books.addCardCapacity(c.Model, -c.Count)
	}
	s.books.countNodeCards(name, old.models, -1)
	s.books.countCarriers(old.allocatable, -1)
	delete(s.books.nodes, name)
	s.books.nodesGen.Add(1)
	s.notifyLocked()
}

// cardKey is a card resource and the model a node carries it under.
type cardKey struct {
	resource corev1.ResourceName
	model    string
}

// countNodeCards adds the node to (sign 1) or removes it from (-1)
// the nodes of each card resource and model it carries.
func (b *books) countNodeCards(name string, n cardmodel.Node, sign int) {
	add := func(r corev1.ResourceName, model string) {
		delete(b.modelLists, cardKey{r, model})
		byModel := b.nodesByCard[r]
		if byModel == nil {
			byModel = map[string]map[string]struct{}{}
			b.nodesByCard[r] = byModel
		}
		names := byModel[model]
		if names == nil {
			names = map[string]struct{}{}
			byModel[model] = names
		}
		if sign > 0 {
			names[name] = struct{}{}
			return
		}
		if delete(names, name); len(names) == 0 {
			delete(byModel, model)
			if len(byModel) == 0 {
				delete(b.nodesByCard, r)
			}
		}
	}
	for _, c := range n.Cards {
		if c.Count > 0 { // a node with none allocatable serves no pod of them
			add(c.Resource, c.Model)
		}
	}
	for _, r := range n.Unlabelled {
		add(r, "")
	}
}

// countCarriers adds sign to the count of nodes that have each
// resource of alloc allocatable.
func (b *books) countCarriers(alloc quota.Resources, sign int) {
	for r, v := range alloc {
		if v <= 0 {
			continue
		}
		if b.carriers[r] += sign; b.carriers[r] <= 0 {
			delete(b.carriers, r)
		}
	}
}

// ModelsCarrying returns the card models some node carries resource
// under; unlabelled is true when some node has the resource allocatable
// under no model (no product label, or a vendor's resource learned as
// cards from another node's label); nodes is how many nodes the state
// knows, for callers to tell whether it has seen every node they have.
func (s *State) ModelsCarrying(resource corev1.ResourceName) (models []string, unlabelled bool, nodes int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	labelled := 0
	for m, names := range s.books.nodesByCard[resource] {
		if m == "" {
			continue
		}
		labelled += len(names)
		models = append(models, m)
	}
	return models, len(s.books.nodesByCard[resource][""]) > 0 || s.books.carriers[resource] > labelled, len(s.books.nodes)
}

// NodesOf returns the nodes that carry card resource under model, as last
// detected, sorted by name. The slice is shared: callers must not change
// it. It is made again only after a node of that model comes, goes or
// changes models, not on every call.
func (s *State) NodesOf(resource corev1.ResourceName, model string) []string {
	k := cardKey{resource, model}
	s.mu.RLock()
	list, ok := s.books.modelLists[k]
	none := len(s.books.nodesByCard[resource][model]) == 0
	s.mu.RUnlock()
	if ok || none {
		return list
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if list, ok := s.books.modelLists[k]; ok {
		return list
	}
	list = slices.Sorted(maps.Keys(s.books.nodesByCard[resource][model]))
	s.books.modelLists[k] = list
	return list
}

func (b *books) addCardCapacity(model string, n int64) {
	if b.cardCapacity[model] += n; b.cardCapacity[model] <= 0 {
		delete(b.cardCapacity, model)
	}
}

// Node returns a node's card models as last detected: from the views
// while they are current, else from the state under its read lock. It
// never makes the views anew (NodeViews does, once a cycle), so nodes
// that keep changing while Filter runs cost a lookup each, not a map of
// every node each.
func (s *State) Node(name string) (cardmodel.Node, bool) {
	if v := s.books.views.Load(); v != nil && v.gen == s.books.nodesGen.Load() {
		n, ok := v.nodes[name]
		return n, ok
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.books.nodes[name]; e != nil {
		return e.models, true
	}
	return cardmodel.Node{}, false
}

// nodeViews are the nodes' card models at one nodes generation.
type nodeViews struct {
	gen   uint64
	nodes map[string]cardmodel.Node
}

// NodeViews returns every node's card models as last detected, and the
// nodes generation they are of. The map is shared and never changed:
// Filter and Score read it for every node from parallel goroutines, where
// a lock, even a read lock's shared counter, or a concurrent map showed in
// profiles. It is made anew, in one pass under the lock, on the first call
// after a node came, went, changed models or allocatable; CardinalCardQuota
// calls it once a cycle, in PreFilter, however often nodes change.
func (s *State) NodeViews() (map[string]cardmodel.Node, uint64) {
	if v := s.books.views.Load(); v != nil && v.gen == s.books.nodesGen.Load() {
		return v.nodes, v.gen
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.books.nodesGen.Load() // moves only under the lock
	if v := s.books.views.Load(); v != nil && v.gen == gen {
		return v.nodes, gen
	}
	nodes := make(map[string]cardmodel.Node, len(s.books.nodes))
	for name, e := range s.books.nodes {
		nodes[name] = e.models
	}
	s.books.views.Store(&nodeViews{gen: gen, nodes: nodes})
	return nodes, gen
}

// NodesGeneration changes whenever a node is added or removed or its card
// models change: what a cycle read of the nodes at one generation holds
// while it lasts.
func (s *State) NodesGeneration() uint64 { return s.books.nodesGen.Load() }

// WaitForNode registers pod, refused on a node whose card resources the
// scheduler's snapshot shows but the state does not yet (carried: a node
// it has not seen, or one it saw before those resources came), as waiting
// for card models: their arrival wakes it. current is true, and nothing is
// registered, if the state has caught up meanwhile; the caller may then
// look the node up again.
func (s *State) WaitForNode(pod *corev1.Pod, queue, node string, carried []corev1.ResourceName) (current bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.books.nodes[node]; e != nil && !slices.ContainsFunc(carried, func(r corev1.ResourceName) bool { return !e.models.Carries(r) }) {
		return true
	}
	s.waits.forRoom(pod, queue, true)
	return false
}

// IsCardResource tells whether a request of resource uses cards: a
// well-known card resource, or one some node carries under a product label.
func (s *State) IsCardResource(name corev1.ResourceName) bool {
	if cardmodel.IsCardResource(name) {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.books.cardResources[name]
}

func (b *books) isCardResource(name corev1.ResourceName) bool {
	return cardmodel.IsCardResource(name) || b.cardResources[name]
}

// NodeModels counts nodes per card model they carry, and nodes with card
// resources that no product label names (SPEC §1.4).
func (s *State) NodeModels() (perModel map[string]int, unlabelled int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	perModel = map[string]int{}
	for _, n := range s.books.nodes {
		seen := map[string]bool{}
		for _, c := range n.models.Cards {
			if !seen[c.Model] {
				seen[c.Model] = true
				perModel[c.Model]++
			}
		}
		if len(n.models.Unlabelled) > 0 {
			unlabelled++
		}
	}
	return perModel, unlabelled
}
