package cardmodel

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"cardinal.dev/cardinal/pkg/refusal"
)

// maxNameLength bounds one model name, as the Queue CRD does.
const maxNameLength = 253

// ParseNames reads a card-name value: one model, or alternatives in order of
// preference separated by "|" (SPEC §1.3). Spaces around a name are
// ignored; an empty name, a repeated name or a name with spaces inside is an
// error that says which.
func ParseNames(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no card model given: write a model such as NVIDIA-H200, or alternatives such as NVIDIA-GeForce-RTX-4090|NVIDIA-GeForce-RTX-4090-D")
	}
	parts := strings.Split(s, "|")
	out := make([]string, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for i, part := range parts {
		name := strings.TrimSpace(part)
		switch {
		case name == "":
			return nil, fmt.Errorf("alternative %d of %q is empty: separate models with a single |", i+1, s)
		case strings.ContainsAny(name, " \t\r\n"):
			return nil, fmt.Errorf("card model %q contains whitespace: model names have none (e.g. NVIDIA-H200)", name)
		case len(name) > maxNameLength:
			return nil, fmt.Errorf("card model %.40q... is longer than %d characters", name, maxNameLength)
		case seen[name]:
			return nil, fmt.Errorf("card model %q is listed twice in %q", name, s)
		}
		seen[name] = true
		out = append(out, name)
	}
	return out, nil
}

// ResourceOf is the resource a pod requests to use cards of a model, as far
// as the model's name tells: nvidia.com/mig-<profile> for MIG slices,
// nvidia.com/gpu.shared for MPS shares, and "" for whole cards, whose
// resource depends on the vendor (nvidia.com/gpu, amd.com/gpu, ...).
func ResourceOf(model string) corev1.ResourceName {
	_, sub, ok := strings.Cut(model, "/")
	if !ok {
		return ""
	}
	if profile, ok := strings.CutPrefix(sub, "mig-"); ok {
		return corev1.ResourceName(migPrefix + strings.TrimSuffix(profile, "-mixed"))
	}
	if strings.HasPrefix(sub, "mps-") {
		return MPSResource
	}
	return ""
}

// SameResource checks that alternatives all need the same resource name: a
// pod requests one, so "a whole card or a MIG slice" cannot be met by one
// pod spec and is refused rather than half-scheduled (SPEC §4.4).
func SameResource(models []string) error {
	if a, b, ok := differentResources(models); ok {
		return refusal.MixedResources{Models: [2]string{a, b}, Kinds: [2]string{describe(a), describe(b)}}
	}
	return nil
}

// differentResources returns the first alternative and the first after it
// that needs another resource name; ok is false when all need the same.
func differentResources(models []string) (a, b string, ok bool) {
	for _, m := range models[min(1, len(models)):] {
		if ResourceOf(models[0]) != ResourceOf(m) {
			return models[0], m, true
		}
	}
	return "", "", false
}

// describe says what a card model is used through: whole cards, or the
// name of its MIG or MPS slice resource.
func describe(model string) string {
	if r := ResourceOf(model); r != "" {
		return string(r)
	}
	return "whole cards"
}

// Matches tells whether a pod requesting resource can use cards of model.
func Matches(model string, resource corev1.ResourceName) bool {
	want := ResourceOf(model)
	if want == "" {
		return !IsSubCardResource(resource)
	}
	return want == resource
}

// IsSubCardResource tells whether a resource is a MIG slice or an MPS share.
func IsSubCardResource(name corev1.ResourceName) bool {
	return name == MPSResource || strings.HasPrefix(string(name), migPrefix)
}

// IsCardResource tells whether a pod's request of resource uses cards: the
// GPU and accelerator resources of the common device plugins, MIG slices
// and MPS shares. RDMA, hugepages and the like are not cards (SPEC §1.4).
func IsCardResource(name corev1.ResourceName) bool {
	return IsSubCardResource(name) || isAcceleratorResource(string(name))
}

// CardRequests is what a pod asks for in card resources, by resource, as
// Kubernetes counts a pod's request (SPEC §4.1): containers, init
// containers, restartable init containers (sidecars) on top, and pod
// overhead. isCard says which resources are cards.
func CardRequests(pod *corev1.Pod, isCard func(corev1.ResourceName) bool) map[corev1.ResourceName]int64 {
	if !asksForCards(pod, isCard) {
		return nil // most pods: no need to add up the rest
	}
	var out map[corev1.ResourceName]int64
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if isCard(name) && !q.IsZero() {
			if out == nil {
				out = map[corev1.ResourceName]int64{}
			}
			out[name] = q.Value()
		}
	}
	return out
}

// asksForCards tells whether any container of pod, or its overhead, names
// a card resource.
func asksForCards(pod *corev1.Pod, isCard func(corev1.ResourceName) bool) bool {
	names := func(l corev1.ResourceList) bool {
		for name := range l {
			if isCard(name) {
				return true
			}
		}
		return false
	}
	for i := range pod.Spec.Containers {
		if names(pod.Spec.Containers[i].Resources.Requests) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if names(pod.Spec.InitContainers[i].Resources.Requests) {
			return true
		}
	}
	return names(pod.Spec.Overhead)
}

// Annotation returns the value of key, or of its alias when key is absent,
// with the key it was read from.
func Annotation(annotations map[string]string, key, alias string) (value, from string, ok bool) {
	if v, ok := annotations[key]; ok {
		return v, key, true
	}
	if v, ok := annotations[alias]; ok {
		return v, alias, true
	}
	return "", "", false
}
