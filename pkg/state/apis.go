package state

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Cardinal's own APIs, PodGroups and Queues, may be missing: their CRD not
// installed, or the RBAC to read them not granted. The scheduler then says
// so in its log and in an event on each pod that waits for them, and keeps
// scheduling the pods that need neither (SPEC §6): a gang's pods wait for
// PodGroups, pods that name a queue wait for Queues, and pods of the
// default queue run as in a default queue with no quota if the Queue CRD
// is missing (no Queue can limit them), and wait if it is RBAC. When the API
// comes (the informer lists it at last), the state fills in as after a
// start and the waiting pods are woken as their objects arrive.

// The APIs the state can do without, by the resource its informer lists.
const (
	podGroupsAPI = "podgroups.scheduling.x-k8s.io"
	queuesAPI    = "queues.scheduling.cardinal.dev"
)

// source is an informer feeding the state: synced once it delivered its
// initial list. An optional one (api set) whose list is refused as not
// found or forbidden is missing, and is not waited for.
type source struct {
	api    string
	synced func() bool
}

// watchMissing records when inf's list is refused for want of its CRD or
// of RBAC, and logs it; its informer keeps trying, with backoff.
func (s *State) watchMissing(ctx context.Context, api string, inf cache.SharedIndexInformer) error {
	logger := klog.FromContext(ctx)
	return inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		if inf.HasSynced() || (!apierrors.IsNotFound(err) && !apierrors.IsForbidden(err)) {
			// Listed once, the state has what it needs; a watch that fails
			// later (the CRD deleted, RBAC revoked) is the informer's to retry.
			return
		}
		why := fmt.Sprintf("the CRD %s is not installed (kubectl apply -k config/ installs it)", api)
		if apierrors.IsForbidden(err) {
			why = fmt.Sprintf("the scheduler may not list and watch %s (config/rbac grants it): %v", api, err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.wiring.missing[api] != why {
			logger.Error(err, "Cardinal cannot read an API it uses; pods that need it wait, others are scheduled", "api", api, "why", why)
		}
		s.wiring.missing[api] = why
		s.wiring.noCRD[api] = apierrors.IsNotFound(err)
		if api == podGroupsAPI {
			s.releaseGroupingLocked()
		}
	})
}

// foundAPIsLocked forgets the APIs that are missing no more (their
// informers have listed them at last), creates the default queue once
// Queues can be read, and wakes the pods that waited.
func (s *State) foundAPIsLocked() {
	for _, src := range s.wiring.sources {
		if src.api != "" && s.wiring.missing[src.api] != "" && src.synced() {
			delete(s.wiring.missing, src.api)
			delete(s.wiring.noCRD, src.api)
			klog.Background().Info("Cardinal can read an API it was missing", "api", src.api)
			if src.api == queuesAPI && s.wiring.kube.ensureDefaultQueue != nil {
				go s.wiring.kube.ensureDefaultQueue()
			}
			s.wakeWaitingForLocked(src.api)
		}
	}
}

// wakeWaitingForLocked wakes the pending pods that may have waited for
// api: gang pods for PodGroups, every pod for Queues. kube-scheduler was
// not asked to requeue them on its events (eventhandler.Readable). An API
// comes back rarely: this walks every pod.
func (s *State) wakeWaitingForLocked(api string) {
	var pods []*corev1.Pod
	for _, e := range s.books.pods {
		if !e.placed() && ((api != podGroupsAPI && api != nativePodGroupsAPI) || e.Gang != "") {
			pods = append(pods, e.pod)
		}
	}
	s.activateLocked(slices.Values(pods))
}

// defaultQueueStandsIn tells whether the default queue counts as one with
// no quota though no Queue defines it: the Queue CRD is not installed, so
// no Queue can limit it. Refused the right to read Queues, the state
// cannot tell whether one does, and its pods wait too.
func (s *State) defaultQueueStandsInLocked(name string) bool {
	return name == s.settings.DefaultQueue && s.wiring.noCRD[queuesAPI]
}

// QueuesUnreadable says why Queues cannot be read, or "" if they can.
func (s *State) QueuesUnreadable() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.wiring.missing[queuesAPI]
}
