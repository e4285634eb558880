package grouper

import (
	"slices"

	"gopkg.in/inf.v0"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"
)

// minResources is what a gang's min asks for at least: per resource, the
// sum of the min smallest requests among its pods, read from the
// workload's pod templates as Kubernetes counts a pod's request (init and
// sidecar containers, overhead). It is a lower bound on purpose: queue
// admission holds a gang whose minResources cannot fit (SPEC §3.4), and
// must never hold one whose cheapest min would (a PyTorchJob of a cpu
// master and gpu workers with min 3 asks for 2 gpus, not 3).
func minResources(templates []podTemplate, minMembers int32) corev1.ResourceList {
	type share struct {
		q     resource.Quantity
		count int32
	}
	byResource := map[corev1.ResourceName][]share{}
	total := int64(0)
	for _, t := range templates {
		if t.count <= 0 {
			continue
		}
		total += int64(t.count)
		for name, q := range templateRequests(t.spec) {
			byResource[name] = append(byResource[name], share{q: q, count: t.count})
		}
	}
	out := corev1.ResourceList{}
	for name, shares := range byResource {
		// Pods of templates that do not ask for the resource ask for none
		// of it: they are the smallest.
		asking := int64(0)
		for _, s := range shares {
			asking += int64(s.count)
		}
		need := int64(minMembers) - (total - asking)
		if need <= 0 {
			continue
		}
		slices.SortFunc(shares, func(a, b share) int { return a.q.Cmp(b.q) })
		sum := resource.Quantity{}
		for _, s := range shares {
			n := min(int64(s.count), need)
			d := s.q.AsDec()
			d.Mul(d, inf.NewDec(n, 0))
			sum.Add(*resource.NewDecimalQuantity(*d, s.q.Format))
			if need -= n; need == 0 {
				break
			}
		}
		if !sum.IsZero() {
			out[name] = sum
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// templateRequests is what one pod made from an unstructured pod template
// asks for; nil if the template cannot be read.
func templateRequests(tmpl map[string]any) corev1.ResourceList {
	var pt corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pt); err != nil {
		return nil
	}
	return resourcehelper.PodRequests(&corev1.Pod{Spec: pt.Spec}, resourcehelper.PodResourcesOptions{})
}
