package gang

import "sync"

// Holds are the gangs another plugin holds back before any of their pods is
// tried (the queue plugin, when a gang's min cannot fit its queue). A held
// gang is not waiting to be placed, so it must not keep other gangs' elastic
// pods waiting for its min (SPEC §2.4, §3.4).
type Holds struct {
	mu     sync.RWMutex
	held   map[Key]bool
	onHold []func()
}

// NewHolds returns an empty set.
func NewHolds() *Holds { return &Holds{held: map[Key]bool{}} }

// OnHold registers f, called (outside any lock) when a gang becomes held.
func (h *Holds) OnHold(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onHold = append(h.onHold, f)
}

// Hold marks a gang held.
func (h *Holds) Hold(k Key) {
	h.mu.Lock()
	changed := !h.held[k]
	h.held[k] = true
	fs := h.onHold
	h.mu.Unlock()
	if changed {
		for _, f := range fs {
			f()
		}
	}
}

// Release marks a gang no longer held.
func (h *Holds) Release(k Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, k)
}

// Held tells whether a gang is held. A nil set holds nothing.
func (h *Holds) Held(k Key) bool {
	if h == nil {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.held[k]
}
