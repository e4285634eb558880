package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CardinalGangArgs are the arguments of the gang plugin.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalGangArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PermitWaitingTimeSeconds is how long a gang's placed pods wait at Permit
	// for the rest of its min before the gang gives back all it holds. Default 60.
	PermitWaitingTimeSeconds *int64 `json:"permitWaitingTimeSeconds,omitempty"`
	// PodGroupBackoffSeconds is how long a gang that failed is kept out of
	// scheduling before it is tried again. Default 10.
	PodGroupBackoffSeconds *int64 `json:"podGroupBackoffSeconds,omitempty"`
	// StaleGangSeconds is how long, beyond PermitWaitingTimeSeconds, a gang
	// may stay bound below its min (after a crash mid-bind, a failed bind,
	// or members lost) before its bound pods are evicted so their cards do
	// not sit idle. 0 turns this off. Default 60.
	StaleGangSeconds *int64 `json:"staleGangSeconds,omitempty"`
	// GroupedKinds are the workload kinds whose pods Cardinal groups into
	// gangs itself, making their PodGroups (SPEC §7), as Kind.group (e.g.
	// Job.batch, JobSet.jobset.x-k8s.io). Kinds the cluster does not serve
	// are skipped. [] groups none. Default: every kind Cardinal groups.
	GroupedKinds []string `json:"groupedKinds,omitempty"`
}

// CardinalQueueArgs are the arguments of the queue quota plugin.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalQueueArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultQueue is the queue of pods that name none. Default "default".
	DefaultQueue *string `json:"defaultQueue,omitempty"`
}

// CardinalCardQuotaArgs are the arguments of the card-model quota plugin.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalCardQuotaArgs struct {
	metav1.TypeMeta `json:",inline"`

	// CardUnlimitedCPUMemory, when true, charges pods that use cards no cpu or
	// memory queue quota. Default false.
	CardUnlimitedCPUMemory *bool `json:"cardUnlimitedCpuMemory,omitempty"`
}

// CardinalPreemptionArgs are the arguments of the preemption plugin.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CardinalPreemptionArgs struct {
	metav1.TypeMeta `json:",inline"`

	// PreemptibleBelowPriority makes a workload that sets no preemptibility
	// preemptible when its priority is below this value. Default 100.
	PreemptibleBelowPriority *int32 `json:"preemptibleBelowPriority,omitempty"`
}
