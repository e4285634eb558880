package gang

import "sync"

// Holds are the gangs other plugins hold back before any of their pods is
// tried (the queue and card quota plugins, when a gang's min cannot fit its
// queue). A held gang is not waiting to be placed, so it must not keep other
// gangs' elastic pods waiting for its min (SPEC §2.4, §3.4). Each holder
// holds and releases a gang on its own, with its own reason.
type Holds struct {
	mu     sync.RWMutex
	held   map[Key]map[string]string // gang -> holder -> reason
	onHold []func()
}

// NewHolds returns an empty set.
func NewHolds() *Holds { return &Holds{held: map[Key]map[string]string{}} }

// OnHold registers f, called (outside any lock) when a gang becomes held.
func (h *Holds) OnHold(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onHold = append(h.onHold, f)
}

// Hold marks a gang held by holder for reason, and tells whether that
// holder's reason changed, so the caller records an event only then. A nil
// set holds nothing and reports every reason as changed.
func (h *Holds) Hold(k Key, holder, reason string) (changed bool) {
	if h == nil {
		return true
	}
	h.mu.Lock()
	by := h.held[k]
	newly := len(by) == 0
	if by == nil {
		by = map[string]string{}
		h.held[k] = by
	}
	old, had := by[holder]
	by[holder] = reason
	fs := h.onHold
	h.mu.Unlock()
	if newly {
		for _, f := range fs {
			f()
		}
	}
	return !had || old != reason
}

// Release marks a gang no longer held by holder.
func (h *Holds) Release(k Key, holder string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if by := h.held[k]; by != nil {
		delete(by, holder)
		if len(by) == 0 {
			delete(h.held, k)
		}
	}
}

// Held tells whether any holder holds a gang. A nil set holds nothing.
func (h *Holds) Held(k Key) bool {
	if h == nil {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.held[k]) > 0
}
