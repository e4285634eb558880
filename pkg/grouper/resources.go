package grouper

import (
	"slices"
	"strconv"
	"strings"

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
// asks for; nil if the template cannot be read, or asks for an amount no
// pod could (saneQuantities).
func templateRequests(tmpl map[string]any) corev1.ResourceList {
	if !saneQuantities(tmpl) {
		return nil
	}
	var pt corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pt); err != nil {
		return nil
	}
	return resourcehelper.PodRequests(&corev1.Pod{Spec: pt.Spec}, resourcehelper.PodResourcesOptions{})
}

// maxQuantityLen and maxExponent bound the amounts read from a workload's
// pod templates. A custom resource's template is not validated as a pod
// is, and an amount such as 1e2000000000 parses cheaply but costs hours
// and gigabytes when added to another (the sum is rescaled to a common
// exponent): a tenant could stall the grouper for every namespace.
const (
	maxQuantityLen = 40
	maxExponent    = 30
)

// saneQuantities tells whether every amount a pod template's containers,
// init containers and overhead ask for or limit is short and of a modest
// exponent: its written form only, before any arithmetic.
func saneQuantities(tmpl map[string]any) bool {
	spec, _ := tmpl["spec"].(map[string]any)
	if spec == nil {
		return true
	}
	var lists []any
	for _, field := range []string{"containers", "initContainers"} {
		containers, _ := spec[field].([]any)
		for _, c := range containers {
			m, _ := c.(map[string]any)
			res, _ := m["resources"].(map[string]any)
			lists = append(lists, res["requests"], res["limits"])
		}
	}
	lists = append(lists, spec["overhead"])
	for _, l := range lists {
		amounts, _ := l.(map[string]any)
		for _, v := range amounts {
			if s, ok := v.(string); ok && !saneQuantity(s) {
				return false
			}
		}
	}
	return true
}

func saneQuantity(s string) bool {
	if len(s) > maxQuantityLen {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return true // not an exponent: the suffix E or Ei, or not a quantity at all
	}
	return exp >= -maxExponent && exp <= maxExponent
}
