package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/kubernetes/pkg/features"
)

// A gang member whose resource claims do not all exist is held by
// kube-scheduler's DynamicResources PreEnqueue, and kube-scheduler runs
// PreEnqueue plugins in no fixed order: Cardinal's may see the pod before
// or after it. So the state asks the scheduler's ResourceClaim informer
// itself, as DynamicResources does, whether each of a pending pod's claims
// is there, and counts the pod toward its gang's min only while they all
// are (gangs.go, isGated). Pods are indexed by the claims they name, so a
// claim made or deleted regates just the pods naming it.

// claimsMissing tells whether DynamicResources would hold the pod at
// PreEnqueue: a claim it names (directly, or made from a template and
// named in its status) does not exist, is being deleted, or was made for
// another pod. Nothing is missing when the state reads no claims
// (DynamicResourceAllocation off, or a tool's read-only copy).
func (s *State) claimsMissing(pod *corev1.Pod) bool {
	claims := s.wiring.kube.claims
	if claims == nil {
		return false
	}
	for i := range pod.Spec.ResourceClaims {
		name, mustCheckOwner, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil {
			return true // made from a template, not yet made
		}
		if name == nil {
			continue // none needed
		}
		claim, err := claims.ResourceClaims(pod.Namespace).Get(*name)
		if err != nil || claim.DeletionTimestamp != nil {
			return true
		}
		if mustCheckOwner && resourceclaim.IsForPod(pod, claim, utilfeature.DefaultFeatureGate.Enabled(features.DRAWorkloadResourceClaims)) != nil {
			return true
		}
	}
	return false
}

// claimKeys are the claims, as namespace/name, a pending pod waits for,
// each once.
func claimKeys(pod *corev1.Pod) []string {
	if pod.Spec.NodeName != "" || len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	var keys []string
	for i := range pod.Spec.ResourceClaims {
		if name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i]); err == nil && name != nil {
			if k := pod.Namespace + "/" + *name; !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// claimsChanged tells whether a pod update may change whether
// kube-scheduler holds it at PreEnqueue: its gates, its claims, the claims
// made for it, or its node.
func claimsChanged(old, pod *corev1.Pod) bool {
	return old.Spec.NodeName != pod.Spec.NodeName ||
		!slices.EqualFunc(old.Spec.SchedulingGates, pod.Spec.SchedulingGates, func(a, b corev1.PodSchedulingGate) bool { return a == b }) ||
		len(pod.Spec.ResourceClaims) > 0 && (!slices.EqualFunc(old.Spec.ResourceClaims, pod.Spec.ResourceClaims, samePodClaim) ||
			!slices.EqualFunc(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses, sameClaimStatus))
}

func samePodClaim(a, b corev1.PodResourceClaim) bool {
	return a.Name == b.Name && ptrEq(a.ResourceClaimName, b.ResourceClaimName) && ptrEq(a.ResourceClaimTemplateName, b.ResourceClaimTemplateName)
}

func sameClaimStatus(a, b corev1.PodResourceClaimStatus) bool {
	return a.Name == b.Name && ptrEq(a.ResourceClaimName, b.ResourceClaimName)
}

func ptrEq(a, b *string) bool { return a == b || a != nil && b != nil && *a == *b }

// fileClaims indexes a pod under the claims it waits for now.
func (b *books) fileClaims(e *podEntry) {
	keys := claimKeys(e.pod)
	if slices.Equal(keys, e.claimKeys) {
		return
	}
	b.unfileClaims(e)
	e.claimKeys = keys
	for _, k := range keys {
		b.claimUsers.add(k, e.pod.UID, e)
	}
}

func (b *books) unfileClaims(e *podEntry) {
	for _, k := range e.claimKeys {
		b.claimUsers.remove(k, e.pod.UID)
	}
	e.claimKeys = nil
}

// OnResourceClaim regates the pods that name a claim made or deleted: a
// gang may be complete now, or no longer. The write lock is taken only
// when a pod Cardinal holds names it.
func (s *State) OnResourceClaim(claim *resourceapi.ResourceClaim) {
	key := claim.Namespace + "/" + claim.Name
	s.mu.RLock()
	named := len(s.books.claimUsers[key]) > 0
	s.mu.RUnlock()
	if !named {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.books.claimUsers[key] {
		s.regateLocked(e)
	}
}

// OnResourceClaimGone is OnResourceClaim for a deleted claim.
func (s *State) OnResourceClaimGone(claim *resourceapi.ResourceClaim) { s.OnResourceClaim(claim) }

// OnResourceClaimChanged is OnResourceClaim for a change that may decide
// whether DynamicResources holds its pods: its deletion begun, or its
// owners (whom a claim made from a template is for). Its allocation and
// the pods it is reserved for, written as pods bind, are not.
func (s *State) OnResourceClaimChanged(old, claim *resourceapi.ResourceClaim) {
	if (old.DeletionTimestamp == nil) != (claim.DeletionTimestamp == nil) ||
		!slices.EqualFunc(old.OwnerReferences, claim.OwnerReferences, func(a, b metav1.OwnerReference) bool {
			return a.UID == b.UID && ptrBool(a.Controller) == ptrBool(b.Controller)
		}) {
		s.OnResourceClaim(claim)
	}
}

func ptrBool(b *bool) bool { return b != nil && *b }

// claimHandler feeds the state from the ResourceClaim informer.
func (s *State) claimHandler() cache.ResourceEventHandler {
	typed := func(obj any) (*resourceapi.ResourceClaim, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		c, ok := obj.(*resourceapi.ResourceClaim)
		return c, ok
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if c, ok := typed(obj); ok {
				s.OnResourceClaim(c)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			old, ok1 := typed(oldObj)
			c, ok2 := typed(obj)
			if ok1 && ok2 {
				s.OnResourceClaimChanged(old, c)
			}
		},
		DeleteFunc: func(obj any) {
			if c, ok := typed(obj); ok {
				s.OnResourceClaimGone(c)
			}
		},
	}
}
