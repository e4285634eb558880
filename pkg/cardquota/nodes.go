package cardquota

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"cardinal.dev/cardinal/pkg/cardmodel"
)

// upsertNode records a node's card models in the queue cache, and tells an
// operator through an event when its GPUs carry no product label (SPEC §1.4).
func (p *Plugin) upsertNode(node *corev1.Node) {
	detected, changed := p.cache.UpsertNode(node)
	if changed {
		p.nodes.report(node, detected)
	}
}

func (p *Plugin) deleteNode(node *corev1.Node) {
	p.cache.DeleteNode(node.Name)
	p.nodes.forget(node.Name)
}

// nodeReports records one event per node each time what is wrong with its
// labels changes, not on every node update.
type nodeReports struct {
	recorder events.EventRecorder
	mu       sync.Mutex
	reported map[string]string
}

func newNodeReports(r events.EventRecorder) *nodeReports {
	return &nodeReports{recorder: r, reported: map[string]string{}}
}

func (r *nodeReports) report(node *corev1.Node, detected cardmodel.Node) {
	msg := unlabelledMessage(node.Name, detected.Unlabelled)
	r.mu.Lock()
	changed := r.reported[node.Name] != msg
	r.reported[node.Name] = msg
	r.mu.Unlock()
	if msg == "" || !changed {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	r.recorder.Eventf(ref, nil, corev1.EventTypeWarning, "UnlabelledCards", "CardModel", "%s", msg)
}

func (r *nodeReports) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reported, name)
}

// unlabelledMessage says which card resources have no model and what label
// would give them one.
func unlabelledMessage(node string, resources []corev1.ResourceName) string {
	if len(resources) == 0 {
		return ""
	}
	names, labels := make([]string, 0, len(resources)), map[string]bool{}
	var labelList []string
	for _, r := range resources {
		names = append(names, string(r))
		label := productLabel(r)
		if !labels[label] {
			labels[label] = true
			labelList = append(labelList, label)
		}
	}
	return fmt.Sprintf("node %s has %s but no label %s: these cards have no model, count only as plain resources under a queue's guarantee and capability, and cannot serve pods that set cardinal.dev/card-name; run GPU feature discovery or set the label to the card's product (e.g. NVIDIA-H200)",
		node, strings.Join(names, ", "), strings.Join(labelList, ", "))
}

// productLabel is the label that names the product of a card resource:
// <resource>.product, and nvidia.com/gpu.product for MIG slices and MPS shares.
func productLabel(r corev1.ResourceName) string {
	if cardmodel.IsSubCardResource(r) {
		return "nvidia.com/gpu.product"
	}
	return string(r) + ".product"
}
