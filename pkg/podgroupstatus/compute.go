package podgroupstatus

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
)

// Summary is what a PodGroup's status says, computed from its pods.
type Summary struct {
	Phase                                 schedv1alpha1.PodGroupPhase
	Scheduled, Running, Succeeded, Failed int32
	// WaitingReason says, in numbers, why the gang has not reached its min.
	WaitingReason string
}

// Compute derives a PodGroup's phase and counts from its pods, with
// scheduler-plugins' meanings: Pending while fewer than minMember pods are
// scheduled, Scheduling once min are scheduled but fewer than min run,
// Running at min running, Finished when min succeeded and none runs, Failed
// when a pod failed and fewer than min can still run.
//
// Its waiting reason is reason when given (an admission hold or a backoff,
// whose pods are then not tried), else what the scheduler last said of the
// gang's first pod that waits, in the order its pods are placed (Waits,
// gang.Less). kubectl cardinal why builds the same sentence from the same
// parts.
func Compute(pg *schedv1alpha1.PodGroup, pods []*corev1.Pod, reason string) Summary {
	var s Summary
	var live, gated int32
	var first *corev1.Pod
	for _, p := range pods {
		switch p.Status.Phase {
		case corev1.PodRunning:
			s.Running++
		case corev1.PodSucceeded:
			s.Succeeded++
		case corev1.PodFailed:
			s.Failed++
		}
		if p.Spec.NodeName != "" {
			s.Scheduled++
		}
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			live++
		}
		if len(p.Spec.SchedulingGates) > 0 && p.DeletionTimestamp == nil {
			gated++
		}
		if Waits(p) && (first == nil || gang.Less(p, first)) {
			first = p
		}
	}
	if reason == "" && first != nil {
		for _, c := range first.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				reason = PodReason(first, c.Message)
			}
		}
	}
	minMember := pg.Spec.MinMember
	switch {
	case s.Succeeded >= minMember && minMember > 0 && s.Running == 0:
		s.Phase = schedv1alpha1.PodGroupFinished
	case s.Running >= minMember:
		s.Phase = schedv1alpha1.PodGroupRunning
	case s.Failed > 0 && live+s.Succeeded < minMember:
		s.Phase = schedv1alpha1.PodGroupFailed
	case s.Scheduled >= minMember:
		s.Phase = schedv1alpha1.PodGroupScheduling
	default:
		s.Phase = schedv1alpha1.PodGroupPending
	}
	if s.Scheduled < minMember {
		switch {
		case int32(len(pods)) < minMember:
			s.WaitingReason = fmt.Sprintf("%d of minMember %d pods exist; waiting for %d more", len(pods), minMember, minMember-int32(len(pods)))
		case gated > 0 && live-gated < minMember:
			// Pods behind scheduling gates are not tried: the gang is not
			// complete without them (pkg/state, gangs.go), counted among
			// its live pods as the scheduler counts them.
			have := live - gated
			s.WaitingReason = fmt.Sprintf("%d of minMember %d pods can be scheduled (%d more behind scheduling gates); waiting for %d more",
				have, minMember, gated, minMember-have)
		case reason != "":
			s.WaitingReason = fmt.Sprintf("%d of minMember %d pods scheduled; %s", s.Scheduled, minMember, reason)
		default:
			s.WaitingReason = fmt.Sprintf("%d of minMember %d pods scheduled", s.Scheduled, minMember)
		}
	}
	return s
}

// Waits: the pod is neither placed, ending nor ended.
func Waits(p *corev1.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// PodReason is how a gang's waiting reason quotes what was said of one of its pods.
func PodReason(p *corev1.Pod, msg string) string {
	return fmt.Sprintf("pod %s: %s", p.Name, msg)
}
