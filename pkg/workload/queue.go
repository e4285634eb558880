// Package workload answers questions about a pod that every Cardinal plugin,
// controller and tool must answer the same way, such as which queue it is in.
package workload

import (
	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// QueueName is the queue of a pod, first match wins (SPEC §1.1): the label
// cardinal.dev/queue on its PodGroup, on the pod, on its namespace; else
// defaultQueue. Any of the label maps may be nil.
func QueueName(podGroupLabels, podLabels, namespaceLabels map[string]string, defaultQueue string) string {
	for _, labels := range []map[string]string{podGroupLabels, podLabels, namespaceLabels} {
		if q := labels[v1alpha1.QueueLabel]; q != "" {
			return q
		}
	}
	return defaultQueue
}
