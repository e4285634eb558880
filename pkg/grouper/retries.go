package grouper

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// retries counts, per pod, the grouper's tries to read its owners, so that
// an owner made a moment ago is read again soon and one that never comes
// ever more rarely, whatever the pod's age (a pod older than the grouper,
// after a start, is tried as soon as a new one).
type retries struct {
	mu    sync.Mutex
	tries map[types.UID]int
}

// next is how long until pod uid is tried again: retryUnseen, doubled each
// try, at most maxRetryUnseen.
func (r *retries) next(uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tries == nil {
		r.tries = map[types.UID]int{}
	}
	n := r.tries[uid]
	r.tries[uid] = n + 1
	return min(retryUnseen<<min(n, 16), maxRetryUnseen)
}

// forget ends pod uid's tries: its owners were read, or it is gone.
func (r *retries) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tries, uid)
}

// grouping tracks the controllers whose pods a reconcile is ruling on, so
// that the reconciles of a workload's other pods, which that one rules on
// with it (siblings), do not each try to make the same PodGroup at once:
// they are set aside, and asked for again once it is done.
type grouping struct {
	mu    sync.Mutex
	under map[string][]reconcile.Request
}

// start tells whether the caller may rule on the pods of the controller
// of key (ownerKey): false if another reconcile is, which then asks for
// req again (done).
func (g *grouping) start(key string, req reconcile.Request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.under == nil {
		g.under = map[string][]reconcile.Request{}
	}
	if waiting, ok := g.under[key]; ok {
		g.under[key] = append(waiting, req)
		return false
	}
	g.under[key] = nil
	return true
}

// done ends the ruling on the pods of key's controller and returns the
// requests set aside meanwhile: a pod that came after its siblings were
// read is ruled on by its own.
func (g *grouping) done(key string) []reconcile.Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	waiting := g.under[key]
	delete(g.under, key)
	return waiting
}
