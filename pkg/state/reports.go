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

// forgetReportsLocked forgets what was reported of an object that is gone.
func (s *State) forgetReportsLocked(kind, name string, reasons ...string) {
	for _, r := range reasons {
		delete(s.notes.reported, kind+"/"+name+"/"+r)
	}
}

// reportLocked records the problem last seen with an object ("" is none)
// and, when it is a new one, tells an operator with a warning event: an
// object updated all the time (a Queue's status, a node's heartbeat) is not
// reported each time.
func (s *State) reportLocked(ref *corev1.ObjectReference, reason, action, msg string) {
	name := ref.Name
	if ref.Namespace != "" {
		name = ref.Namespace + "/" + ref.Name // as forgetReportsLocked is given it
	}
	key := ref.Kind + "/" + name + "/" + reason
	changed := s.notes.reported[key] != msg
	if msg == "" {
		delete(s.notes.reported, key)
	} else {
		s.notes.reported[key] = msg
	}
	if changed && msg != "" {
		s.eventLocked(ref, corev1.EventTypeWarning, reason, action, msg)
	}
}
