package coscheduling

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// podShape is the smallest request, per resource, among a gang's pending
// pods: an optimistic stand-in for any one of them.
type podShape struct {
	milliCPU, memory, ephemeral int64
	scalar                      map[corev1.ResourceName]int64
}

func shapeOf(pods []*corev1.Pod) podShape {
	var s podShape
	for i, p := range pods {
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		cpu, mem, eph := req.Cpu().MilliValue(), req.Memory().Value(), req.StorageEphemeral().Value()
		scalar := map[corev1.ResourceName]int64{}
		for name, q := range req {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
				scalar[name] = q.Value()
			}
		}
		if i == 0 {
			s = podShape{milliCPU: cpu, memory: mem, ephemeral: eph, scalar: scalar}
			continue
		}
		s.milliCPU, s.memory, s.ephemeral = min(s.milliCPU, cpu), min(s.memory, mem), min(s.ephemeral, eph)
		for name, v := range s.scalar {
			if w, ok := scalar[name]; !ok {
				delete(s.scalar, name)
			} else {
				s.scalar[name] = min(v, w)
			}
		}
	}
	return s
}

// roomFor counts how many pods of shape s fit in the free resources of the
// nodes, stopping at need. It ignores everything but resources (taints,
// affinity, topology), so it can only overestimate: when it says a gang's min
// does not fit, no placement exists, and the gang is refused before it
// reserves anything, rather than holding part of the cluster while it finds
// out. O(nodes) per attempt of a gang, not per pod.
func roomFor(s podShape, nodes []fwk.NodeInfo, need int) int {
	total := 0
	for _, n := range nodes {
		alloc, used := n.GetAllocatable(), n.GetRequested()
		fit := alloc.GetAllowedPodNumber() - len(n.GetPods())
		fit = minFit(fit, alloc.GetMilliCPU()-used.GetMilliCPU(), s.milliCPU)
		fit = minFit(fit, alloc.GetMemory()-used.GetMemory(), s.memory)
		fit = minFit(fit, alloc.GetEphemeralStorage()-used.GetEphemeralStorage(), s.ephemeral)
		for name, req := range s.scalar {
			fit = minFit(fit, alloc.GetScalarResources()[name]-used.GetScalarResources()[name], req)
		}
		if fit > 0 {
			total += fit
			if total >= need {
				return total
			}
		}
	}
	return total
}

func minFit(fit int, free, req int64) int {
	if req <= 0 {
		return fit
	}
	if free < req {
		return 0
	}
	return min(fit, int(free/req))
}
