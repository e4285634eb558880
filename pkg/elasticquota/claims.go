package elasticquota

import (
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
)

// keptRoom refuses a pod a node whose room preemption keeps for another
// preemptor's members while their victims terminate (SPEC §5.8): the pod
// may use only what is free beyond it. kube-scheduler's nominated pods keep
// that room from pods of lower or equal priority; this keeps it from all.
// It costs nothing on nodes without kept room, which is nearly all of them.
// own is the key the pod's own claims are kept under.
func keptRoom(own, queue string, request quota.Resources, nodeInfo fwk.NodeInfo, claims []state.Claim) *fwk.Status {
	kept := state.KeptFrom(own, queue, nodeInfo, claims)
	if len(kept) == 0 {
		return nil
	}
	free := freeOn(nodeInfo)
	for r, v := range request {
		if k := kept[r]; k > 0 && free[r]-k < v {
			return refusal.Status(fwk.Unschedulable, refusal.RoomKept{
				Node: nodeInfo.Node().Name, Resource: string(r), Kept: k, Free: max(free[r], 0)})
		}
	}
	return nil
}

// freeOn is what a node has allocatable and no pod requests.
func freeOn(ni fwk.NodeInfo) quota.Resources {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	free := quota.Resources{
		corev1.ResourceCPU:              alloc.GetMilliCPU() - used.GetMilliCPU(),
		corev1.ResourceMemory:           alloc.GetMemory() - used.GetMemory(),
		corev1.ResourceEphemeralStorage: alloc.GetEphemeralStorage() - used.GetEphemeralStorage(),
	}
	for r, v := range alloc.GetScalarResources() {
		free[r] = v - used.GetScalarResources()[r]
	}
	return free
}
