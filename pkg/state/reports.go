package state

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/cardmodel"
)

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
