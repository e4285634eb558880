package workload

import (
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"

	configv1 "cardinal.dev/cardinal/apis/config/v1"
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

// Classifier decides a workload's preemptibility. Its threshold is set by the
// preemption plugin from its args and read by every plugin that needs it, so
// one setting governs them all.
type Classifier struct {
	threshold atomic.Int32
	owners    OwnerListers
}

// OwnerListers find a pod's top-level owner. Any may be nil.
type OwnerListers struct {
	ReplicaSets  appslisters.ReplicaSetLister
	Deployments  appslisters.DeploymentLister
	StatefulSets appslisters.StatefulSetLister
	DaemonSets   appslisters.DaemonSetLister
	Jobs         batchlisters.JobLister
	CronJobs     batchlisters.CronJobLister
}

// NewClassifier returns a classifier with the default threshold.
func NewClassifier() *Classifier {
	c := &Classifier{}
	c.threshold.Store(configv1.DefaultPreemptibleBelowPriority)
	return c
}

// SetThreshold sets preemptibleBelowPriority.
func (c *Classifier) SetThreshold(v int32) { c.threshold.Store(v) }

// SetOwnerListers gives the classifier the listers it reads owners with.
func (c *Classifier) SetOwnerListers(l OwnerListers) { c.owners = l }

// Of returns a pod's preemptibility, first match wins: the PodGroup's label,
// the label of the pod's top-level owner, the pod's label; else preemptible
// when its priority is below the threshold. An invalid value falls back to
// the priority rule; warning then says what was wrong, for an event.
func (c *Classifier) Of(pod *corev1.Pod, podGroupLabels map[string]string) (p Preemptibility, warning string) {
	sources := []struct {
		what   string
		labels map[string]string
	}{
		{"its PodGroup", podGroupLabels},
		{"its owner", c.ownerLabels(pod)},
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
	return c.byPriority(pod), warning
}

func (c *Classifier) byPriority(pod *corev1.Pod) Preemptibility {
	var prio int32
	if pod.Spec.Priority != nil {
		prio = *pod.Spec.Priority
	}
	if prio < c.threshold.Load() {
		return Preemptible
	}
	return NonPreemptible
}

// ownerLabels walks controller references up to the top-level owner, through
// the kinds batch workloads use, and returns its labels (nil if unknown).
func (c *Classifier) ownerLabels(pod *corev1.Pod) map[string]string {
	ref := metav1.GetControllerOf(pod)
	var labels map[string]string
	ns := pod.Namespace
	for depth := 0; ref != nil && depth < 4; depth++ {
		var obj metav1.Object
		var err error
		switch {
		case ref.Kind == "ReplicaSet" && c.owners.ReplicaSets != nil:
			obj, err = c.owners.ReplicaSets.ReplicaSets(ns).Get(ref.Name)
		case ref.Kind == "Deployment" && c.owners.Deployments != nil:
			obj, err = c.owners.Deployments.Deployments(ns).Get(ref.Name)
		case ref.Kind == "StatefulSet" && c.owners.StatefulSets != nil:
			obj, err = c.owners.StatefulSets.StatefulSets(ns).Get(ref.Name)
		case ref.Kind == "DaemonSet" && c.owners.DaemonSets != nil:
			obj, err = c.owners.DaemonSets.DaemonSets(ns).Get(ref.Name)
		case ref.Kind == "Job" && c.owners.Jobs != nil:
			obj, err = c.owners.Jobs.Jobs(ns).Get(ref.Name)
		case ref.Kind == "CronJob" && c.owners.CronJobs != nil:
			obj, err = c.owners.CronJobs.CronJobs(ns).Get(ref.Name)
		default:
			return labels
		}
		if err != nil {
			return labels
		}
		labels = obj.GetLabels()
		ref = metav1.GetControllerOfNoCopy(obj)
	}
	return labels
}
