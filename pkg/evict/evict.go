// Package evict evicts pods the way kube-scheduler's preemption does: the
// DisruptionTarget condition, then a delete, each API call tried again with
// backoff while it fails (SPEC §5.7, §5.8, §2.6).
package evict

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// Backoff spaces the attempts to evict a pod: about two minutes in all,
// long enough for a restarting kube-apiserver or an admission webhook that
// times out to come back.
var Backoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 30 * time.Second}

// Pod marks pod a disruption target (reason PreemptionByScheduler, with
// why as its message) and deletes it. A pod already gone is evicted.
func Pod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, why string) error {
	cond := &corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		Status:             corev1.ConditionTrue,
		Reason:             corev1.PodReasonPreemptionByScheduler,
		Message:            why,
		LastTransitionTime: metav1.Now(),
	}
	status := pod.Status.DeepCopy()
	if podutil.UpdatePodCondition(status, cond) {
		if err := schedutil.PatchPodStatus(ctx, cs, pod.Name, pod.Namespace, &pod.Status, status); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// Only this pod: over the retries, another of the same name (a
	// StatefulSet's) may have taken its place.
	err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// WithRetries calls evict with Backoff until it succeeds, and returns the
// last attempt's error if none did.
func WithRetries(ctx context.Context, pod *corev1.Pod, evict func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, Backoff, func(ctx context.Context) (bool, error) {
		if last = evict(ctx); last != nil {
			klog.FromContext(ctx).V(2).Info("Evicting a pod failed; trying again", "pod", klog.KObj(pod), "err", last)
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
