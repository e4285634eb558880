package grouper

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// labelBound labels a pod, bound in the gang the grouper put it in, with
// its PodGroup, as the Binding did not (API servers before 1.35): one
// write per pod, after it is bound, where newer servers need none.
//
// Only for a gang the grouper made (a PodGroup of that name marked as
// Cardinal's): the annotation is the pod's, and a tenant may write it.
func (g *Grouper) labelBound(ctx context.Context, pod *corev1.Pod) error {
	name := pod.Annotations[v1alpha1.PodGroupAnnotation]
	if len(validation.IsValidLabelValue(name)) > 0 {
		return nil
	}
	if pg, err := g.podGroup(pod.Namespace, name); err != nil || pg.Annotations[v1alpha1.GroupedByAnnotation] == "" {
		return client.IgnoreNotFound(err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{schedv1alpha1.PodGroupLabel: name}}})
	if err != nil {
		return err
	}
	err = g.client.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		return nil // gone, or refused for good: asked again on its next change
	}
	return err
}

// unlabelledBound tells whether pod was bound in the gang the grouper put
// it in by an API server that took its label from the Binding, as servers
// before 1.35 do not: it carries the gang's annotation and not its label,
// which label-selected caches and tools read (labelBound).
func unlabelledBound(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Annotations[v1alpha1.PodGroupAnnotation] != "" && pod.Labels[schedv1alpha1.PodGroupLabel] == ""
}
