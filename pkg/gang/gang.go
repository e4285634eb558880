// Package gang says, the same way for everyone (the gang plugin, preemption,
// metrics, tools), which gang a pod belongs to and which of a gang's placed
// pods are its min members and which are elastic (SPEC §1.2).
package gang

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// Key is a gang's namespace/name: that of its scheduler-plugins PodGroup,
// or, for Kubernetes' own PodGroup (scheduling.k8s.io), namespace/name
// followed by NativeSuffix, so that PodGroups of the same name in the two
// APIs are two gangs. A pod without a PodGroup is a gang of one and has no
// Key.
type Key string

// NativeSuffix ends the Key of a gang whose PodGroup is Kubernetes' own
// (scheduling.k8s.io/v1beta1). No object name holds an "@".
const NativeSuffix = "@" + schedulingv1beta1.GroupName

// Of returns the gang a pod names: the PodGroup its
// scheduling.x-k8s.io/pod-group label names, or else the Kubernetes
// PodGroup its spec.schedulingGroup names, or else the PodGroup its
// cardinal.dev/pod-group annotation names (written when Cardinal binds a
// pod it grouped), in the pod's namespace. A pending pod the grouper put
// in its workload's gang names none: the scheduling state knows its gang
// (state.GangOf).
func Of(pod *corev1.Pod) (Key, bool) {
	if name := pod.Labels[schedv1alpha1.PodGroupLabel]; name != "" {
		return Key(pod.Namespace + "/" + name), true
	}
	if name := NativeName(pod); name != "" {
		return NativeKey(pod.Namespace, name), true
	}
	if name := pod.Annotations[v1alpha1.PodGroupAnnotation]; name != "" {
		return Key(pod.Namespace + "/" + name), true
	}
	return "", false
}

// NativeName is the Kubernetes PodGroup a pod's spec.schedulingGroup names,
// or "".
func NativeName(pod *corev1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// NamesGroup tells whether a pod already names a PodGroup of either API
// (SPEC §7 rule 1: such a pod is left alone by the grouper).
func NamesGroup(pod *corev1.Pod) bool {
	_, ok := Of(pod)
	return ok
}

// Split returns the PodGroup's namespace and name.
func (k Key) Split() (namespace, name string) {
	namespace, name, _ = strings.Cut(strings.TrimSuffix(string(k), NativeSuffix), "/")
	return namespace, name
}

// Native tells whether the gang's PodGroup is Kubernetes' own.
func (k Key) Native() bool { return strings.HasSuffix(string(k), NativeSuffix) }

// KeyOf is the Key of a PodGroup.
func KeyOf(pg *schedv1alpha1.PodGroup) Key {
	return Key(pg.Namespace + "/" + pg.Name)
}

// NativeKey is the Key of Kubernetes' PodGroup namespace/name.
func NativeKey(namespace, name string) Key {
	return Key(namespace + "/" + name + NativeSuffix)
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
