package grouper

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
