package refusal

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/quota"
)

// Refusals of a node for a pod (Filter) and of a pod's card models (SPEC
// §4, §5.8). Filter builds one for every node it refuses, so their Models
// are the pod's own list, not copies: the state replaces a pod's card
// names when they change, never edits them in place.

// ModelNotAllowed: the node's cards are of a model the pod does not list.
type ModelNotAllowed struct {
	Node, Model string
	Models      []string
}

func (r ModelNotAllowed) String() string {
	return fmt.Sprintf("node %s has %s, which is not among the pod's card models %s", r.Node, r.Model, strings.Join(r.Models, "|"))
}

func (r ModelNotAllowed) Error() string { return r.String() }
func (r ModelNotAllowed) Fix() string   { return noModelFix(r.Models) }

// NoModelOnNode: the node has none of the pod's card models.
type NoModelOnNode struct {
	Node   string
	Models []string
}

func (r NoModelOnNode) String() string {
	return fmt.Sprintf("node %s has none of the pod's card models %s", r.Node, strings.Join(r.Models, "|"))
}

func (r NoModelOnNode) Error() string { return r.String() }
func (r NoModelOnNode) Fix() string   { return noModelFix(r.Models) }

func noModelFix(models []string) string {
	return fmt.Sprintf("add nodes with card model %s, or allow other models in the pod's %s annotation", strings.Join(models, "|"), v1alpha1.CardNameAnnotation)
}

// UnlabelledCards: the node's cards carry no product label, so they have
// no model, and the pod asks for models (SPEC §1.4).
type UnlabelledCards struct {
	Node   string
	Models []string
}

func (r UnlabelledCards) String() string {
	return fmt.Sprintf("node %s's cards have no model (no product label), and the pod asks for %s", r.Node, strings.Join(r.Models, "|"))
}

func (r UnlabelledCards) Error() string { return r.String() }

func (r UnlabelledCards) Fix() string {
	return "label the nodes' GPUs with their product (GPU feature discovery sets nvidia.com/gpu.product), or drop the pod's card-name annotation"
}

// ModelsUnknown: the node's card models are not known to Cardinal yet.
type ModelsUnknown struct {
	Node string
}

func (r ModelsUnknown) String() string {
	return fmt.Sprintf("node %s's card models are not known to Cardinal yet; the pod is tried again when they are", r.Node)
}

func (r ModelsUnknown) Error() string { return r.String() }
func (r ModelsUnknown) Fix() string {
	return "nothing: it is tried again once the node's card models are known"
}

// MixedResources: the pod's card-name alternatives are used through
// different resources (a whole card and a MIG slice), and a pod requests
// only one (SPEC §4.4).
type MixedResources struct {
	// Pod is the pod that asks, or "" for a gang's card request.
	Pod string
	// Models are the first two alternatives that differ; Kinds say what
	// each is used through.
	Models, Kinds [2]string
}

func (r MixedResources) String() string {
	s := fmt.Sprintf("card models %s and %s need different resources (%s and %s), and a pod requests only one: list alternatives of the same kind, or run one workload per kind",
		r.Models[0], r.Models[1], r.Kinds[0], r.Kinds[1])
	if r.Pod != "" {
		return "pod " + r.Pod + ": " + s
	}
	return s
}

func (r MixedResources) Error() string { return r.String() }

func (r MixedResources) Fix() string {
	return fmt.Sprintf("in the %s annotation, list only models used through one resource (all whole cards, or all the same MIG or MPS slice)", v1alpha1.CardNameAnnotation)
}

// WrongResource: the pod requests a resource its first card model is not
// used through.
type WrongResource struct {
	Pod, Resource, Model string
}

func (r WrongResource) String() string {
	return fmt.Sprintf("pod %s requests %s, which is not what card model %s is used through: request the model's resource or change the card-name annotation", r.Pod, r.Resource, r.Model)
}

func (r WrongResource) Error() string { return r.String() }

func (r WrongResource) Fix() string {
	return fmt.Sprintf("request the resource card model %s is used through, or change the %s annotation", r.Model, v1alpha1.CardNameAnnotation)
}

// Insufficient: the node has too little free of a resource. It is what
// kube-scheduler's NodeResourcesFit says, in its words.
type Insufficient struct {
	Resource string
}

func (r Insufficient) String() string  { return "Insufficient " + r.Resource }
func (r Insufficient) Error() string   { return r.String() }
func (r Insufficient) Fix() string     { return RoomFix(r, false) }
func (r Insufficient) Lacking() string { return "free " + r.Resource }

// RoomKept: the node's free room is kept for a gang whose victims are
// terminating (SPEC §5.8).
type RoomKept struct {
	Node, Resource string
	Kept, Free     int64
}

func (r RoomKept) String() string {
	f := func(v int64) string { return quota.Format(corev1.ResourceName(r.Resource), v) }
	return fmt.Sprintf("node %s: its %s is kept for a gang that preempted for it (%s of %s free is kept)", r.Node, r.Resource, f(r.Kept), f(r.Free))
}

func (r RoomKept) Error() string { return r.String() }

func (r RoomKept) Fix() string {
	return "nothing: the room is kept for a gang whose victims are terminating; the pod is tried on it once that gang is placed"
}

// NoAlternative: none of the pod's card-name alternatives has quota left;
// Each says why, in the pod's order of preference.
type NoAlternative struct {
	Each []Refusal
}

func (r NoAlternative) String() string {
	parts := make([]string, len(r.Each))
	for i, e := range r.Each {
		parts[i] = e.String()
	}
	return strings.Join(parts, "; ")
}

func (r NoAlternative) Error() string { return r.String() }

// Fix is that of the first alternative short of quota, else of the first
// that does not fit the guarantee, else of the first.
func (r NoAlternative) Fix() string {
	for _, e := range r.Each {
		if _, ok := e.(QuotaExceeded); ok {
			return e.Fix()
		}
	}
	for _, e := range r.Each {
		if _, ok := e.(GuaranteeExceeded); ok {
			return e.Fix()
		}
	}
	if len(r.Each) > 0 {
		return r.Each[0].Fix()
	}
	return ""
}

func init() {
	register[ModelNotAllowed]()
	register[NoModelOnNode]()
	register[UnlabelledCards]()
	register[ModelsUnknown]()
	register[MixedResources]()
	register[WrongResource]()
	register[Insufficient]()
	register[RoomKept]()
}
