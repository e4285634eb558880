// Package cardmodel finds the card models a node carries from what device
// plugins and GPU feature discovery already publish (SPEC §1.4), and what a
// pod placed there is charged in cards of each model (SPEC §4.1).
//
// Detection is a pure function of the Node; callers compute it when a node
// changes and keep the result, never per Filter call.
package cardmodel

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	productSuffix = ".product"
	migPrefix     = "nvidia.com/mig-"
	// MPSResource is the shared-GPU resource of NVIDIA's MPS sharing.
	MPSResource = corev1.ResourceName("nvidia.com/gpu.shared")
	// MPSReplicasLabel is how many MPS replicas each card is split into.
	MPSReplicasLabel = "nvidia.com/gpu.replicas"
	// NVIDIAMemoryLabel is the memory of one card in MiB, as GPU feature discovery labels it.
	NVIDIAMemoryLabel = "nvidia.com/gpu.memory"
)

// Card is one kind of card on a node: a model name and the resource whose
// units are its cards.
type Card struct {
	// Model is the name quota is kept under, e.g. NVIDIA-H200,
	// NVIDIA-H200/mig-1g.18gb-mixed or NVIDIA-L40S/mps-45g*1/4.
	Model string
	// Resource is the extended resource a pod requests to use this card.
	Resource corev1.ResourceName
	// Count is how many the node has allocatable.
	Count int64
	// Former is the name Cardinal gave this card before SPEC §1.4 named MPS
	// shares after the whole card's memory, when it differs from Model: a
	// Queue that still lists it is told the new name.
	Former string
}

// Node is what a node carries: its product and its cards, whole and shared.
type Node struct {
	// Product is the node's card product, empty when it has none or it is unlabelled.
	Product string
	// Cards are sorted by Model.
	Cards []Card
	// Unlabelled lists card resources the node has that no product label names:
	// they count only as plain resources, and the node deserves an event.
	Unlabelled []corev1.ResourceName
	// products are the node's product labels: <domain>/<type> -> product.
	products map[string]string
	// mpsModel is what an MPS share on this node is called, "" without an NVIDIA product.
	mpsModel string
	// formerMPSModel is what Cardinal called it before SPEC §1.4 said how.
	formerMPSModel string
}

// Detect reads a node's card models from its labels and allocatable.
//
// A whole card is resource <domain>/<type> with label <domain>/<type>.product;
// MIG slices are resources nvidia.com/mig-<profile>, named
// <product>/mig-<profile>-mixed; MPS shares are nvidia.com/gpu.shared with
// label nvidia.com/gpu.replicas=N, named <product>/mps-<memGiB>g*1/<N>.
// Other scalar resources are not cards.
func Detect(node *corev1.Node) Node {
	var out Node
	products := map[string]string{} // "<domain>/<type>" -> product
	for k, v := range node.Labels {
		if base, ok := strings.CutSuffix(k, productSuffix); ok && strings.Contains(base, "/") && v != "" {
			products[base] = v
		}
	}
	nvidiaProduct := products["nvidia.com/gpu"]
	out.Product = nvidiaProduct
	if len(products) > 0 {
		out.products = products
	}
	if nvidiaProduct != "" {
		out.mpsModel = mpsModel(nvidiaProduct, node.Labels)
		if former := legacyMPSModel(nvidiaProduct, node.Labels); former != out.mpsModel {
			out.formerMPSModel = former
		}
	}
	for name, qty := range node.Status.Allocatable {
		n := string(name)
		count := qty.Value()
		switch {
		case strings.HasPrefix(n, migPrefix):
			if nvidiaProduct == "" {
				out.Unlabelled = append(out.Unlabelled, name)
				continue
			}
			out.Cards = append(out.Cards, Card{Model: migModel(nvidiaProduct, name), Resource: name, Count: count})
		case name == MPSResource:
			if nvidiaProduct == "" {
				out.Unlabelled = append(out.Unlabelled, name)
				continue
			}
			out.Cards = append(out.Cards, Card{Model: out.mpsModel, Resource: name, Count: count, Former: out.formerMPSModel})
		default:
			if p, ok := products[n]; ok {
				out.Cards = append(out.Cards, Card{Model: p, Resource: name, Count: count})
				if out.Product == "" {
					out.Product = p
				}
			} else if isAcceleratorResource(n) {
				out.Unlabelled = append(out.Unlabelled, name)
			}
		}
	}
	sort.Slice(out.Cards, func(i, j int) bool { return out.Cards[i].Model < out.Cards[j].Model })
	sort.Slice(out.Unlabelled, func(i, j int) bool { return out.Unlabelled[i] < out.Unlabelled[j] })
	return out
}

// ProductLabel is the node label whose value is the model of whole cards
// of resource r (<domain>/<type>.product), as Detect reads it; false for
// MIG slices and MPS shares, whose models Detect builds from the node's
// NVIDIA product and more labels.
func ProductLabel(r corev1.ResourceName) (string, bool) {
	n := string(r)
	if strings.HasPrefix(n, migPrefix) || r == MPSResource || !strings.Contains(n, "/") {
		return "", false
	}
	return n + productSuffix, true
}

// migModel names a MIG slice: <product>/mig-<profile>-mixed.
func migModel(product string, resource corev1.ResourceName) string {
	return product + "/mig-" + strings.TrimPrefix(string(resource), migPrefix) + "-mixed"
}

// mpsModel names an MPS share: <product>/mps-<memGiB>g*1/<replicas>, where
// memGiB is the whole card's memory (the nvidia.com/gpu.memory label, MiB) in
// GiB rounded to the nearest, as Volcano's capacity-card design names it (SPEC
// §1.4): an NVIDIA-H800 of 81559 MiB split in 2 is NVIDIA-H800/mps-80g*1/2.
func mpsModel(product string, labels map[string]string) string {
	replicas, memMiB := mpsShape(labels)
	return fmt.Sprintf("%s/mps-%dg*1/%d", product, (memMiB+512)/1024, replicas)
}

// legacyMPSModel is the name Cardinal gave the same MPS share before it
// followed SPEC §1.4: the card's memory divided by its replicas, rounded
// down. It is kept only to tell a Queue that still lists it what the share is
// called now.
func legacyMPSModel(product string, labels map[string]string) string {
	replicas, memMiB := mpsShape(labels)
	return fmt.Sprintf("%s/mps-%dg*1/%d", product, memMiB/1024/replicas, replicas)
}

func mpsShape(labels map[string]string) (replicas, memMiB int) {
	replicas, err := strconv.Atoi(labels[MPSReplicasLabel])
	if err != nil || replicas < 1 {
		replicas = 1
	}
	memMiB, err = strconv.Atoi(labels[NVIDIAMemoryLabel])
	if err != nil || memMiB < 0 {
		memMiB = 0
	}
	return replicas, memMiB
}

// isAcceleratorResource tells whether an extended resource looks like cards
// that ought to carry a product label: the GPU and accelerator resources of
// the common device plugins. RDMA, hugepages and the like are not.
func isAcceleratorResource(name string) bool {
	switch name {
	case "nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe":
		return true
	}
	return strings.HasPrefix(name, "huawei.com/Ascend")
}

// Carries tells whether this view of a node has resource r as cards, of a
// model or unlabelled.
func (n Node) Carries(r corev1.ResourceName) bool {
	return slices.Contains(n.Unlabelled, r) || slices.ContainsFunc(n.Cards, func(c Card) bool { return c.Resource == r })
}

// Carried tells, without detecting the node's models, whether Detect(node)
// would carry r (Node.Carries) when node has some of r allocatable: a
// lookup of one label at most, for Filter to call.
func Carried(node *corev1.Node, r corev1.ResourceName) bool {
	n := string(r)
	switch {
	case strings.HasPrefix(n, migPrefix), r == MPSResource, isAcceleratorResource(n):
		return true
	}
	return strings.Contains(n, "/") && node.Labels[n+productSuffix] != ""
}

// Equal tells whether two detections are the same.
func (n Node) Equal(o Node) bool {
	return n.Product == o.Product && n.mpsModel == o.mpsModel && n.formerMPSModel == o.formerMPSModel && maps.Equal(n.products, o.products) &&
		slices.Equal(n.Cards, o.Cards) && slices.Equal(n.Unlabelled, o.Unlabelled)
}

// ModelOf returns the card model a request of resource is counted as on
// this node, or "" when resource is not a card there. It reads the node's
// product labels only, not what it has allocatable: a pod keeps being
// counted as the model it was placed as when the node is re-sliced under
// it (the GPU is still the same product), and the answer is the same after
// a restart as before.
func (n Node) ModelOf(resource corev1.ResourceName) string {
	switch {
	case strings.HasPrefix(string(resource), migPrefix):
		if p := n.products["nvidia.com/gpu"]; p != "" {
			return migModel(p, resource)
		}
		return ""
	case resource == MPSResource:
		return n.mpsModel
	default:
		return n.products[string(resource)]
	}
}

// PodCards is what a pod placed on node is charged, in cards per model
// (SPEC §4.1): each card resource it requests, counted as the model the
// node's labels name for it (ModelOf). Requests of resources that are not
// cards on that node are not counted.
func (n Node) PodCards(pod *corev1.Pod) map[string]int64 {
	if len(n.products) == 0 {
		return nil
	}
	return n.Charge(CardRequests(pod, func(r corev1.ResourceName) bool { return n.ModelOf(r) != "" }))
}

// Charge is what requests of card resources (CardRequests) are charged on
// this node, in cards per model, as PodCards charges the pod that makes them.
func (n Node) Charge(requests map[corev1.ResourceName]int64) map[string]int64 {
	var out map[string]int64
	for r, q := range requests {
		if model := n.ModelOf(r); model != "" && q > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[model] += q
		}
	}
	return out
}
