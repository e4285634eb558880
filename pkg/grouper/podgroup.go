package grouper

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// PodGroupFor is the PodGroup a plan asks for, in namespace: owned by the
// workload it is made for (deleted with it, and with its top-level owner
// when that deletes the workload), marked as Cardinal's by
// cardinal.dev/grouped-by, with the min, minResources, queue and
// preemptibility labels and card request of the plan.
func PodGroupFor(p *Plan, namespace string) *schedv1alpha1.PodGroup {
	u := p.Unit.Obj
	pg := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.Name,
			Namespace:   namespace,
			Labels:      maps.Clone(p.Labels),
			Annotations: map[string]string{v1alpha1.GroupedByAnnotation: p.GroupedBy()},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: u.GetAPIVersion(),
				Kind:       u.GetKind(),
				Name:       u.GetName(),
				UID:        u.GetUID(),
			}},
		},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: p.Min, MinResources: p.MinResources},
	}
	if p.CardRequest != "" {
		pg.Annotations[v1alpha1.CardRequestAnnotation] = p.CardRequest
	}
	return pg
}

// Action is what to do with the PodGroup of a plan's name.
type Action int

// The actions Decide chooses among.
const (
	// Create: no PodGroup of that name exists.
	Create Action = iota
	// Keep: it is Cardinal's, for this workload, and as the plan asks.
	Keep
	// Update: it is Cardinal's, for this workload, and what Cardinal
	// manages in it differs from the plan.
	Update
	// Replace: it is Cardinal's, for a workload of the same name that is
	// gone (one deleted and made again before the garbage collector took
	// its PodGroup).
	Replace
	// Conflict: someone else made it, or Cardinal made it for another
	// workload still there: it is left alone (PodGroupNameConflict).
	Conflict
)

// Decide says what to do given the PodGroup of want's name as it exists
// (nil if none); ownerLives tells whether the workload an existing
// Cardinal PodGroup names as its owner still exists, or fails when it
// cannot tell (its kind not read yet, the read refused): Decide then
// fails too, and nothing is replaced on a guess.
func Decide(have, want *schedv1alpha1.PodGroup, ownerLives func(metav1.OwnerReference) (bool, error)) (Action, error) {
	switch {
	case have == nil:
		return Create, nil
	case have.Annotations[v1alpha1.GroupedByAnnotation] == "":
		return Conflict, nil
	case !sameOwner(have, want):
		if len(have.OwnerReferences) == 0 {
			return Replace, nil
		}
		lives, err := ownerLives(have.OwnerReferences[0])
		switch {
		case err != nil:
			return Keep, fmt.Errorf("PodGroup %s/%s: whether its workload %s %s still exists: %w",
				have.Namespace, have.Name, have.OwnerReferences[0].Kind, have.OwnerReferences[0].Name, err)
		case !lives:
			return Replace, nil
		}
		return Conflict, nil
	case !managedEqual(have, want):
		return Update, nil
	}
	return Keep, nil
}

func sameOwner(a, b *schedv1alpha1.PodGroup) bool {
	return len(a.OwnerReferences) > 0 && len(b.OwnerReferences) > 0 && a.OwnerReferences[0].UID == b.OwnerReferences[0].UID &&
		a.Annotations[v1alpha1.GroupedByAnnotation] == b.Annotations[v1alpha1.GroupedByAnnotation]
}

// managed are the labels and annotations the grouper writes; it leaves
// every other one (the status writers' annotations, a user's labels) as
// it finds it.
var (
	managedLabels      = []string{v1alpha1.QueueLabel, v1alpha1.PreemptibilityLabel}
	managedAnnotations = []string{v1alpha1.CardRequestAnnotation}
)

func managedEqual(have, want *schedv1alpha1.PodGroup) bool {
	if have.Spec.MinMember != want.Spec.MinMember || !resourcesEqual(have.Spec.MinResources, want.Spec.MinResources) {
		return false
	}
	for _, k := range managedLabels {
		if have.Labels[k] != want.Labels[k] {
			return false
		}
	}
	for _, k := range managedAnnotations {
		if have.Annotations[k] != want.Annotations[k] {
			return false
		}
	}
	return true
}

func resourcesEqual(a, b corev1.ResourceList) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// Mended is have with what the grouper manages set as want has it, and
// everything else kept.
func Mended(have, want *schedv1alpha1.PodGroup) *schedv1alpha1.PodGroup {
	out := have.DeepCopy()
	out.Spec.MinMember, out.Spec.MinResources = want.Spec.MinMember, want.Spec.MinResources
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for _, k := range managedLabels {
		setOrDelete(out.Labels, k, want.Labels[k])
	}
	for _, k := range managedAnnotations {
		setOrDelete(out.Annotations, k, want.Annotations[k])
	}
	return out
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
		return
	}
	m[k] = v
}
