package builder

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// PodGroupWrapper builds a scheduler-plugins PodGroup for tests.
type PodGroupWrapper struct{ schedv1alpha1.PodGroup }

// MakePodGroup starts a PodGroup of minMember min.
func MakePodGroup(namespace, name string, min int32) *PodGroupWrapper {
	return &PodGroupWrapper{schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: min},
	}}
}

// UID sets the PodGroup's UID.
func (g *PodGroupWrapper) UID(uid string) *PodGroupWrapper {
	g.ObjectMeta.UID = types.UID(uid)
	return g
}

// Created sets when the PodGroup was created.
func (g *PodGroupWrapper) Created(t time.Time) *PodGroupWrapper {
	g.CreationTimestamp = metav1.NewTime(t)
	return g
}

// Labels sets all its labels.
func (g *PodGroupWrapper) Labels(labels map[string]string) *PodGroupWrapper {
	g.ObjectMeta.Labels = labels
	return g
}

// Label sets a label.
func (g *PodGroupWrapper) Label(k, v string) *PodGroupWrapper {
	if g.ObjectMeta.Labels == nil {
		g.ObjectMeta.Labels = map[string]string{}
	}
	g.ObjectMeta.Labels[k] = v
	return g
}

// Annotation sets an annotation.
func (g *PodGroupWrapper) Annotation(k, v string) *PodGroupWrapper {
	if g.Annotations == nil {
		g.Annotations = map[string]string{}
	}
	g.Annotations[k] = v
	return g
}

// MinResources sets what the gang's min needs in all of one resource.
func (g *PodGroupWrapper) MinResources(name corev1.ResourceName, qty string) *PodGroupWrapper {
	if g.Spec.MinResources == nil {
		g.Spec.MinResources = corev1.ResourceList{}
	}
	g.Spec.MinResources[name] = resource.MustParse(qty)
	return g
}

// ScheduleTimeout sets spec.scheduleTimeoutSeconds, the Permit wait.
func (g *PodGroupWrapper) ScheduleTimeout(seconds int32) *PodGroupWrapper {
	g.Spec.ScheduleTimeoutSeconds = &seconds
	return g
}

// Obj returns the PodGroup.
func (g *PodGroupWrapper) Obj() *schedv1alpha1.PodGroup { return &g.PodGroup }
