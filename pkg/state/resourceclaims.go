package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
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

// claimKeys are the claims, as namespace/name, a pending pod waits for.
func claimKeys(pod *corev1.Pod) []string {
	if pod.Spec.NodeName != "" || len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	var keys []string
	for i := range pod.Spec.ResourceClaims {
		if name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i]); err == nil && name != nil {
			keys = append(keys, pod.Namespace+"/"+*name)
		}
	}
	return keys
}

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

// OnResourceClaim regates the pods that name a claim made, changed or
// deleted: a gang may be complete now, or no longer.
func (s *State) OnResourceClaim(claim *resourceapi.ResourceClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.books.claimUsers[claim.Namespace+"/"+claim.Name] {
		s.regateLocked(e)
	}
}

// OnResourceClaimGone is OnResourceClaim for a deleted claim.
func (s *State) OnResourceClaimGone(claim *resourceapi.ResourceClaim) { s.OnResourceClaim(claim) }
