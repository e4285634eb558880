// Package gang says, the same way for everyone (the gang plugin, preemption,
// metrics, tools), which gang a pod belongs to and which of a gang's placed
// pods are its min members and which are elastic (SPEC §1.2).
package gang

import (
	"sort"
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

// SplitElastic splits a gang's placed (bound or reserved) pods into its min
// members and its elastic pods. The min members are the minMember oldest pods
// by creation time, then name; the others are elastic. The rule depends only
// on what the API shows, so every component draws the line in the same place,
// and evicting an elastic pod never takes a gang below its min.
func SplitElastic(minMember int32, placed []*corev1.Pod) (minMembers, elastic []*corev1.Pod) {
	sorted := append([]*corev1.Pod(nil), placed...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	n := max(0, min(int(minMember), len(sorted)))
	return sorted[:n], sorted[n:]
}
