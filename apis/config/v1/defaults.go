package v1

import (
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/workload"
)

// Defaults of the plugin arguments. PermitWaitingTimeSeconds leaves a gang of
// several hundred pods time to be placed one cycle at a time before its first
// members give up their reservations.
const (
	DefaultPermitWaitingTimeSeconds int64 = 60
	DefaultPodGroupBackoffSeconds   int64 = 10
	DefaultStaleGangSeconds         int64 = 60
	DefaultPreemptibleBelowPriority int32 = 100
)

// SetDefaults_CardinalGangArgs sets the gang plugin's defaults.
func SetDefaults_CardinalGangArgs(obj *CardinalGangArgs) {
	if obj.PermitWaitingTimeSeconds == nil {
		obj.PermitWaitingTimeSeconds = ptr.To(DefaultPermitWaitingTimeSeconds)
	}
	if obj.PodGroupBackoffSeconds == nil {
		obj.PodGroupBackoffSeconds = ptr.To(DefaultPodGroupBackoffSeconds)
	}
	if obj.StaleGangSeconds == nil {
		obj.StaleGangSeconds = ptr.To(DefaultStaleGangSeconds)
	}
	if obj.GroupedKinds == nil {
		obj.GroupedKinds = DefaultGroupedKinds()
	}
}

// DefaultGroupedKinds are every workload kind Cardinal groups (SPEC §7).
func DefaultGroupedKinds() []string {
	out := make([]string, len(workload.GroupableKinds))
	for i, gk := range workload.GroupableKinds {
		out[i] = gk.String()
	}
	return out
}

// SetDefaults_CardinalQueueArgs sets the queue plugin's defaults.
func SetDefaults_CardinalQueueArgs(obj *CardinalQueueArgs) {
	if obj.DefaultQueue == nil {
		obj.DefaultQueue = ptr.To(v1alpha1.DefaultQueueName)
	}
}

// SetDefaults_CardinalCardQuotaArgs sets the card quota plugin's defaults.
func SetDefaults_CardinalCardQuotaArgs(obj *CardinalCardQuotaArgs) {
	if obj.CardUnlimitedCPUMemory == nil {
		obj.CardUnlimitedCPUMemory = ptr.To(false)
	}
}

// SetDefaults_CardinalPreemptionArgs sets the preemption plugin's defaults.
func SetDefaults_CardinalPreemptionArgs(obj *CardinalPreemptionArgs) {
	if obj.PreemptibleBelowPriority == nil {
		obj.PreemptibleBelowPriority = ptr.To(DefaultPreemptibleBelowPriority)
	}
}
