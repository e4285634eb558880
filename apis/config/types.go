package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CardinalGangArgs are the arguments of the gang plugin (pkg/coscheduling).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalGangArgs struct {
	metav1.TypeMeta

	// PermitWaitingTimeSeconds is how long a gang's placed pods wait at Permit
	// for the rest of its min before the gang gives back all it holds.
	PermitWaitingTimeSeconds int64
	// PodGroupBackoffSeconds is how long a gang that failed is kept out of
	// scheduling before it is tried again.
	PodGroupBackoffSeconds int64
	// StaleGangSeconds is how long, beyond PermitWaitingTimeSeconds, a gang
	// may stay bound below its min before its bound pods are evicted so
	// their cards do not sit idle; 0 turns this off.
	StaleGangSeconds int64
	// GroupedKinds are the workload kinds whose pods Cardinal groups into
	// gangs itself (SPEC §7), as Kind.group; empty groups none.
	GroupedKinds []string
}

// CardinalQueueArgs are the arguments of the queue quota plugin (pkg/elasticquota).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalQueueArgs struct {
	metav1.TypeMeta

	// DefaultQueue is the queue of pods that name none.
	DefaultQueue string
}

// CardinalCardQuotaArgs are the arguments of the card-model quota plugin (pkg/cardquota).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalCardQuotaArgs struct {
	metav1.TypeMeta

	// CardUnlimitedCPUMemory, when true, charges pods that use cards no cpu or
	// memory queue quota: their cards are what is rationed.
	CardUnlimitedCPUMemory bool
}

// CardinalPreemptionArgs are the arguments of the preemption plugin (pkg/preemption).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalPreemptionArgs struct {
	metav1.TypeMeta

	// PreemptibleBelowPriority makes a workload that sets no preemptibility
	// preemptible when its priority is below this value (SPEC §5.1).
	PreemptibleBelowPriority int32
}
