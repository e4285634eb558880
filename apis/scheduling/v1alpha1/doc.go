// Package v1alpha1 holds Cardinal's own API types, group scheduling.cardinal.dev,
// version v1alpha1 (SPEC §1.1).
//
// Typed clients, listers and informers for these types are generated with
// k8s.io/code-generator (pkg/generated) rather than used through a
// controller-runtime client: kube-scheduler plugins are fed by shared informer
// factories that start and sync with the scheduler, and the generated
// informers plug into that lifecycle and into the scheduler's event handlers
// without a second cache.
//
// +k8s:deepcopy-gen=package
// +groupName=scheduling.cardinal.dev
package v1alpha1
