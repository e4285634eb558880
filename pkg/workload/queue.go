// Package workload answers questions about a pod that every Cardinal plugin,
// controller and tool must answer the same way, such as which queue it is in.
package workload

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

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

// Resolver finds a pod's queue from informer listers, so every plugin
// resolves it alike. The queue plugin sets it up from its args; until then
// Ready is false.
type Resolver struct {
	state atomic.Pointer[resolverState]
}

type resolverState struct {
	podGroups    pglisters.PodGroupLister
	namespaces   corelisters.NamespaceLister
	defaultQueue string
}

// Init sets the listers and the default queue.
func (r *Resolver) Init(podGroups pglisters.PodGroupLister, namespaces corelisters.NamespaceLister, defaultQueue string) {
	r.state.Store(&resolverState{podGroups: podGroups, namespaces: namespaces, defaultQueue: defaultQueue})
}

// Ready tells whether Init was called.
func (r *Resolver) Ready() bool { return r.state.Load() != nil }

// QueueOf is a pod's queue (SPEC §1.1), with its PodGroup's labels. Call
// it only once Ready.
func (r *Resolver) QueueOf(pod *corev1.Pod) (string, map[string]string) {
	s := r.state.Load()
	var pgLabels, nsLabels map[string]string
	if name := pod.Labels[schedv1alpha1.PodGroupLabel]; name != "" {
		if pg, err := s.podGroups.PodGroups(pod.Namespace).Get(name); err == nil {
			pgLabels = pg.Labels
		}
	}
	if ns, err := s.namespaces.Get(pod.Namespace); err == nil {
		nsLabels = ns.Labels
	}
	return QueueName(pgLabels, pod.Labels, nsLabels, s.defaultQueue), pgLabels
}
