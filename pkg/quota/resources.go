// Package quota holds the arithmetic of queue quota: resource vectors in the
// units the scheduler counts (milli-cpu, bytes, whole units), and the
// deserved share of each queue (SPEC §3.2).
package quota

import (
	"fmt"

	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resources is an amount per resource: cpu in millicores, everything else in
// its base unit. A missing resource is zero.
type Resources map[corev1.ResourceName]int64

// FromList converts a ResourceList.
func FromList(l corev1.ResourceList) Resources {
	out := make(Resources, len(l))
	for name, q := range l {
		out[name] = value(name, q)
	}
	return out
}

func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// PodRequests is what a pod asks for, as kube-scheduler counts it (init
// containers, overhead and pod-level resources included). The pods count is
// not quota and is left out.
func PodRequests(pod *corev1.Pod) Resources {
	out := FromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	delete(out, corev1.ResourcePods)
	return out
}

// Add adds b to r in place.
func (r Resources) Add(b Resources) {
	for k, v := range b {
		r[k] += v
	}
}

// Sub subtracts b from r in place, dropping entries that reach zero.
func (r Resources) Sub(b Resources) {
	for k, v := range b {
		if r[k] -= v; r[k] == 0 {
			delete(r, k)
		}
	}
}

// Clone copies r.
func (r Resources) Clone() Resources {
	out := make(Resources, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

// Exceeded returns the first resource, in name order, for which used+req
// goes above limit, considering only the resources limit names.
func Exceeded(used, req, limit Resources) (corev1.ResourceName, bool) {
	var names []corev1.ResourceName
	for name, v := range req {
		if v > 0 {
			if _, capped := limit[name]; capped {
				names = append(names, name)
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, name := range names {
		if used[name]+req[name] > limit[name] {
			return name, true
		}
	}
	return "", false
}

// Format writes an amount of one resource in the user's units: cpu as
// cores, memory-like resources as binary quantities, counts as integers.
func Format(name corev1.ResourceName, v int64) string {
	switch {
	case name == corev1.ResourceCPU:
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return resource.NewQuantity(v, resource.BinarySI).String()
	default:
		return fmt.Sprint(v)
	}
}

// ToList converts back to a ResourceList.
func (r Resources) ToList() corev1.ResourceList {
	out := make(corev1.ResourceList, len(r))
	for name, v := range r {
		if name == corev1.ResourceCPU {
			out[name] = *resource.NewMilliQuantity(v, resource.DecimalSI)
		} else if name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
			out[name] = *resource.NewQuantity(v, resource.BinarySI)
		} else {
			out[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return out
}

// String is r in one line, names sorted: "cpu=4,memory=8Gi".
func (r Resources) String() string {
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, n+"="+Format(corev1.ResourceName(n), r[corev1.ResourceName(n)]))
	}
	return strings.Join(parts, ",")
}
