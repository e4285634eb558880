package workload

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// Preemptibility is preemptible, non-preemptible or semi-preemptible (SPEC §5.1).
type Preemptibility string

// The preemptibility values.
const (
	Preemptible     Preemptibility = v1alpha1.Preemptible
	NonPreemptible  Preemptibility = v1alpha1.NonPreemptible
	SemiPreemptible Preemptibility = v1alpha1.SemiPreemptible
)

// Owners finds a pod's top-level owner through informer listers. Any lister
// may be nil; an owner whose kind has none ends the walk.
type Owners struct {
	ReplicaSets  appslisters.ReplicaSetLister
	Deployments  appslisters.DeploymentLister
	StatefulSets appslisters.StatefulSetLister
	DaemonSets   appslisters.DaemonSetLister
	Jobs         batchlisters.JobLister
	CronJobs     batchlisters.CronJobLister
}

// Classify returns a pod's preemptibility, first match wins (SPEC §5.1):
// the PodGroup's label, the label of the pod's top-level owner, the pod's
// label; else preemptible when its priority is below threshold
// (preemptibleBelowPriority). An invalid value falls back to the priority
// rule; warning then says what was wrong, for an event.
func Classify(pod *corev1.Pod, podGroupLabels, ownerLabels map[string]string, threshold int32) (p Preemptibility, warning string) {
	sources := []struct {
		what   string
		labels map[string]string
	}{
		{"its PodGroup", podGroupLabels},
		{"its owner", ownerLabels},
		{"the pod", pod.Labels},
	}
	for _, s := range sources {
		v, ok := s.labels[v1alpha1.PreemptibilityLabel]
		if !ok {
			continue
		}
		switch Preemptibility(v) {
		case Preemptible, NonPreemptible, SemiPreemptible:
			return Preemptibility(v), ""
		}
		warning = fmt.Sprintf("label %s=%q on %s is not one of preemptible, non-preemptible, semi-preemptible; using the priority rule",
			v1alpha1.PreemptibilityLabel, v, s.what)
		break
	}
	return byPriority(pod, threshold), warning
}

func byPriority(pod *corev1.Pod, threshold int32) Preemptibility {
	var prio int32
	if pod.Spec.Priority != nil {
		prio = *pod.Spec.Priority
	}
	if prio < threshold {
		return Preemptible
	}
	return NonPreemptible
}

// Labels walks controller references up to the pod's top-level owner,
// through the kinds batch workloads use, and returns its labels (nil if
// unknown).
func (o Owners) Labels(pod *corev1.Pod) map[string]string {
	labels, _ := o.Walk(pod)
	return labels
}

// Walk is Labels, and names the first owner on the way of a kind it reads
// that its listers do not hold ("" if none): one just created whose event
// has not arrived yet, whose labels are not known.
func (o Owners) Walk(pod *corev1.Pod) (labels map[string]string, unseen string) {
	ref := metav1.GetControllerOf(pod)
	ns := pod.Namespace
	for depth := 0; ref != nil && depth < 4; depth++ {
		// Only Kubernetes' own kinds: another project's Job or StatefulSet
		// (batch.volcano.sh, apps.kruise.io) is not in these listers.
		if group, _, _ := strings.Cut(ref.APIVersion, "/"); group != "apps" && group != "batch" {
			return labels, ""
		}
		var obj metav1.Object
		var err error
		switch {
		case ref.Kind == "ReplicaSet" && o.ReplicaSets != nil:
			obj, err = o.ReplicaSets.ReplicaSets(ns).Get(ref.Name)
		case ref.Kind == "Deployment" && o.Deployments != nil:
			obj, err = o.Deployments.Deployments(ns).Get(ref.Name)
		case ref.Kind == "StatefulSet" && o.StatefulSets != nil:
			obj, err = o.StatefulSets.StatefulSets(ns).Get(ref.Name)
		case ref.Kind == "DaemonSet" && o.DaemonSets != nil:
			obj, err = o.DaemonSets.DaemonSets(ns).Get(ref.Name)
		case ref.Kind == "Job" && o.Jobs != nil:
			obj, err = o.Jobs.Jobs(ns).Get(ref.Name)
		case ref.Kind == "CronJob" && o.CronJobs != nil:
			obj, err = o.CronJobs.CronJobs(ns).Get(ref.Name)
		default:
			return labels, ""
		}
		if err != nil || obj.GetUID() != ref.UID {
			return labels, ref.Kind + " " + ns + "/" + ref.Name
		}
		labels = obj.GetLabels()
		ref = metav1.GetControllerOfNoCopy(obj)
	}
	return labels, ""
}
