// Package gang says, the same way for everyone (the gang plugin, preemption,
// metrics, tools), which gang a pod belongs to and which of a gang's placed
// pods are its min members and which are elastic (SPEC §1.2).
package gang

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Key is a gang's namespace/name. A pod without a PodGroup is a gang of one
// and has no Key.
type Key string

// Of returns the gang of a pod: the PodGroup its scheduling.x-k8s.io/pod-group
// label names, in the pod's namespace.
func Of(pod *corev1.Pod) (Key, bool) {
	name := pod.Labels[schedv1alpha1.PodGroupLabel]
	if name == "" {
		return "", false
	}
	return Key(pod.Namespace + "/" + name), true
}

// Split returns the PodGroup's namespace and name.
func (k Key) Split() (namespace, name string) {
	namespace, name, _ = strings.Cut(string(k), "/")
	return namespace, name
}

// KeyOf is the Key of a PodGroup.
func KeyOf(pg *schedv1alpha1.PodGroup) Key {
	return Key(pg.Namespace + "/" + pg.Name)
}

// Less is a gang's rank order of its pods: older first by creation time,
// then by name, then by UID. It depends only on what the API shows, so every
// component ranks a gang's pods alike, before and after a restart. It is
// the one definition of elastic (SPEC §1.2): of a gang's placed pods, the
// minMember first in this order are its min members and the others are
// elastic. pkg/state keeps every gang's placed pods in this order and
// charges them by it, so evicting elastic pods never takes a gang below
// its min.
func Less(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}
