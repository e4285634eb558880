// Package eventhandler turns two typed functions into an informer event
// handler, so plugins do not each unwrap tombstones and assert types.
package eventhandler

import "k8s.io/client-go/tools/cache"

// For calls upsert on adds and updates and remove on deletes, for objects of
// type T that keep passes; anything else is ignored. Tombstones
// (DeletedFinalStateUnknown) are unwrapped.
func For[T any](keep func(T) bool, upsert, remove func(T)) cache.ResourceEventHandler {
	typed := func(obj any) (T, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		t, ok := obj.(T)
		if ok && keep != nil && !keep(t) {
			ok = false
		}
		return t, ok
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if t, ok := typed(obj); ok {
				upsert(t)
			}
		},
		UpdateFunc: func(_, obj any) {
			if t, ok := typed(obj); ok {
				upsert(t)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := typed(obj); ok {
				remove(t)
			}
		},
	}
}
