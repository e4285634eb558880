package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label and annotation keys read by Cardinal (SPEC §1.2, §1.3).
const (
	// QueueLabel names the Queue of a PodGroup, pod or namespace.
	QueueLabel = "cardinal.dev/queue"
	// PreemptibilityLabel is preemptible, non-preemptible or semi-preemptible.
	PreemptibilityLabel = "cardinal.dev/preemptibility"
	// CardNameAnnotation lists, on a pod, the card models it may use in order of preference.
	CardNameAnnotation = "cardinal.dev/card-name"
	// CardRequestAnnotation is, on a PodGroup, the whole cards the gang needs in total (JSON).
	CardRequestAnnotation = "cardinal.dev/card-request"
	// PlacedAsAnnotation is written on a pod when Cardinal binds it: the
	// queue it was placed in and whether it was placed as non-preemptible
	// work, "<queue>/<preemptibility>", so the books are the same after a
	// restart (SPEC §3.7).
	PlacedAsAnnotation = "cardinal.dev/placed-as"
	// MinMemberAnnotation, on a workload (a pod's controller or its
	// top-level owner), is the min of the gang Cardinal makes for it
	// (SPEC §7).
	MinMemberAnnotation = "cardinal.dev/min-member"
	// PodGroupAnnotation is written on a pod Cardinal grouped into its
	// workload's PodGroup, in the Binding that binds it (with the label
	// scheduling.x-k8s.io/pod-group, which API servers before 1.35 do not
	// take from a Binding): the gang a bound pod was placed in, after a
	// restart too (SPEC §7).
	PodGroupAnnotation = "cardinal.dev/pod-group"
	// GroupedByAnnotation marks a PodGroup Cardinal made for a workload,
	// "<Kind>/<name>" (and "/<group index>" for a LeaderWorkerSet's group):
	// Cardinal keeps it and leaves every other PodGroup alone (SPEC §7).
	GroupedByAnnotation = "cardinal.dev/grouped-by"

	// VolcanoCardNameAnnotation is read as an alias of CardNameAnnotation.
	VolcanoCardNameAnnotation = "volcano.sh/card.name"
	// VolcanoCardRequestAnnotation is read as an alias of CardRequestAnnotation.
	VolcanoCardRequestAnnotation = "volcano.sh/card.request"
	// VolcanoCardQuotaAnnotation on a Queue is a JSON map of model to count
	// meaning guarantee = capability, read as an alias of spec.cards.
	VolcanoCardQuotaAnnotation = "volcano.sh/card.quota"

	// DefaultQueueName is the queue of a pod that names none (SPEC §1.1).
	DefaultQueueName = "default"
)

// Preemptibility values (SPEC §5.1).
const (
	Preemptible     = "preemptible"
	NonPreemptible  = "non-preemptible"
	SemiPreemptible = "semi-preemptible"
)

// Queue is a cluster-scoped share of the cluster: a guarantee that is always
// available to it, a capability it never exceeds, and a weight for sharing
// what nobody is guaranteed (SPEC §1.1, §3).
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cq
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="Reclaimable",type=boolean,JSONPath=`.spec.reclaimable`
// +kubebuilder:printcolumn:name="Allocated",type=string,JSONPath=`.status.allocatedSummary`
// +kubebuilder:printcolumn:name="Cards",type=string,JSONPath=`.status.cardSummary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   QueueSpec   `json:"spec,omitempty"`
	Status QueueStatus `json:"status,omitempty"`
}

// QueueSpec is what an administrator gives a queue.
//
// +kubebuilder:validation:XValidation:rule="!has(self.guarantee) || !has(self.capability) || self.guarantee.all(r, !(r in self.capability) || quantity(string(self.capability[r])).compareTo(quantity(string(self.guarantee[r]))) >= 0)",message="capability must be at least guarantee for every resource listed in both",fieldPath=".capability"
type QueueSpec struct {
	// Weight is this queue's share of what is not guaranteed to anyone.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// Reclaimable says whether other queues may reclaim what this queue uses
	// beyond its deserved share.
	// +kubebuilder:default=true
	// +optional
	Reclaimable *bool `json:"reclaimable,omitempty"`

	// Guarantee is always available to this queue (min).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(r, !quantity(string(self[r])).isLessThan(quantity('0')))",message="guarantee must not be negative"
	// +optional
	Guarantee corev1.ResourceList `json:"guarantee,omitempty"`

	// Capability is the hard cap (max); a resource left out is not capped.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(r, !quantity(string(self[r])).isLessThan(quantity('0')))",message="capability must not be negative"
	// +optional
	Capability corev1.ResourceList `json:"capability,omitempty"`

	// NamespaceSelector names the namespaces whose pods may use this queue;
	// absent or empty means every namespace. A pod in a namespace it does
	// not match stays Pending and is charged nothing here (SPEC §1.1).
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="operator must be In, NotIn, Exists or DoesNotExist",fieldPath=".matchExpressions"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="values must be given for In and NotIn, and only for them",fieldPath=".matchExpressions"
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Cards is the quota per card model, in whole cards or sub-cards. A model
	// not listed cannot be used by this queue.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Cards []CardQuota `json:"cards,omitempty"`
}

// CardQuota is a queue's quota for one card model.
//
// A guarantee of 0 is omitted from the stored object, hence the has().
//
// +kubebuilder:validation:XValidation:rule="!has(self.capability) || self.capability >= (has(self.guarantee) ? self.guarantee : 0)",message="capability must be at least guarantee",fieldPath=".capability"
type CardQuota struct {
	// Name is the card model, e.g. NVIDIA-H200 or NVIDIA-H200/mig-1g.18gb-mixed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^|\s]+$`
	Name string `json:"name"`

	// Guarantee is how many cards of this model are guaranteed.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Guarantee int32 `json:"guarantee,omitempty"`

	// Capability caps this model, borrowed cards included; defaults to Guarantee.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Capability *int32 `json:"capability,omitempty"`
}

// EffectiveCapability is Capability, or Guarantee when Capability is unset.
func (c CardQuota) EffectiveCapability() int32 {
	if c.Capability != nil {
		return *c.Capability
	}
	return c.Guarantee
}

// QueueStatus is written by Cardinal.
type QueueStatus struct {
	// Allocated is what bound and reserved pods of this queue use.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`

	// Cards is the use of each card model against its quota.
	// +listType=map
	// +listMapKey=name
	// +optional
	Cards []CardStatus `json:"cards,omitempty"`

	// Deserved is this queue's current fair share (SPEC §3.2).
	// +optional
	Deserved corev1.ResourceList `json:"deserved,omitempty"`

	// AllocatedSummary is Allocated in one line, for kubectl get.
	// +optional
	AllocatedSummary string `json:"allocatedSummary,omitempty"`

	// CardSummary is Cards in one line (model=allocated/capability), for kubectl get.
	// +optional
	CardSummary string `json:"cardSummary,omitempty"`

	// Conditions tell whether the queue is over its share or its capability.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CardStatus is the use of one card model by a queue, in cards.
type CardStatus struct {
	Name string `json:"name"`
	// Allocated is what bound and reserved pods use.
	Allocated  int32 `json:"allocated"`
	Guarantee  int32 `json:"guarantee"`
	Capability int32 `json:"capability"`
	// Deserved is the queue's current fair share of this model (SPEC §3.2).
	// +optional
	Deserved int32 `json:"deserved"`
}

// QueueList is a list of Queues.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}
