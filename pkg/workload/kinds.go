package workload

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"cardinal.dev/cardinal/pkg/gang"
)

// The workload kinds whose pods Cardinal groups into gangs itself (SPEC §7),
// named Kind.group as in the scheduler configuration's groupedKinds.
var (
	Job              = schema.GroupKind{Group: "batch", Kind: "Job"}
	JobSet           = schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}
	LeaderWorkerSet  = schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}
	PyTorchJob       = schema.GroupKind{Group: "kubeflow.org", Kind: "PyTorchJob"}
	TFJob            = schema.GroupKind{Group: "kubeflow.org", Kind: "TFJob"}
	MPIJob           = schema.GroupKind{Group: "kubeflow.org", Kind: "MPIJob"}
	XGBoostJob       = schema.GroupKind{Group: "kubeflow.org", Kind: "XGBoostJob"}
	PaddleJob        = schema.GroupKind{Group: "kubeflow.org", Kind: "PaddleJob"}
	JAXJob           = schema.GroupKind{Group: "kubeflow.org", Kind: "JAXJob"}
	TrainJob         = schema.GroupKind{Group: "trainer.kubeflow.org", Kind: "TrainJob"}
	RayCluster       = schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}
	RayJob           = schema.GroupKind{Group: "ray.io", Kind: "RayJob"}
	Deployment       = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	StatefulSet      = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	ReplicaSet       = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	CronJob          = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	PodKind          = schema.GroupKind{Kind: "Pod"}
	kubeflowTraining = []schema.GroupKind{PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob}
)

// GroupableKinds are the kinds SPEC §7's table groups, in its order: the
// default of groupedKinds.
var GroupableKinds = append(append([]schema.GroupKind{Job, JobSet, LeaderWorkerSet}, kubeflowTraining...),
	TrainJob, RayCluster, RayJob, Deployment, StatefulSet)

// IsKubeflowTraining tells whether gk is one of Kubeflow's training jobs
// (runPolicy.schedulingPolicy.minAvailable, replica specs).
func IsKubeflowTraining(gk schema.GroupKind) bool { return slices.Contains(kubeflowTraining, gk) }

// ParseKind reads a kind as groupedKinds names it: Kind.group, e.g.
// Job.batch or JobSet.jobset.x-k8s.io.
func ParseKind(s string) (schema.GroupKind, error) {
	kind, group, ok := strings.Cut(s, ".")
	gk := schema.GroupKind{Group: group, Kind: kind}
	if !ok || kind == "" || group == "" {
		return gk, fmt.Errorf("%q is not Kind.group (e.g. Job.batch)", s)
	}
	if !slices.Contains(GroupableKinds, gk) {
		names := make([]string, len(GroupableKinds))
		for i, k := range GroupableKinds {
			names[i] = k.String()
		}
		return gk, fmt.Errorf("%s is not a kind Cardinal groups; it groups %s", s, strings.Join(names, ", "))
	}
	return gk, nil
}

// Kinds is a set of groupable kinds: those the scheduler configuration
// says to group.
type Kinds map[schema.GroupKind]bool

// NewKinds is the set of gks.
func NewKinds(gks ...schema.GroupKind) Kinds {
	k := Kinds{}
	for _, gk := range gks {
		k[gk] = true
	}
	return k
}

// controllerKinds are, for each groupable kind, the kinds that control its
// pods directly: a JobSet's pods are its Jobs', a Deployment's its
// ReplicaSets', a LeaderWorkerSet's its StatefulSets', a RayJob's its
// RayCluster's, an MPIJob's launcher its Job's.
func controllerKinds(gk schema.GroupKind) []schema.GroupKind {
	switch gk {
	case JobSet, TrainJob:
		return []schema.GroupKind{Job}
	case Deployment:
		return []schema.GroupKind{ReplicaSet}
	case LeaderWorkerSet:
		return []schema.GroupKind{StatefulSet}
	case RayJob:
		return []schema.GroupKind{RayCluster}
	case MPIJob:
		return []schema.GroupKind{MPIJob, Job}
	}
	return []schema.GroupKind{gk}
}

// Groupable tells whether the grouper rules on pod (SPEC §7): a pod of
// scheduler that names no PodGroup yet, is not placed, and whose
// controller is of a kind that controls the pods of a kind in k. The
// scheduling state holds such a pod until the grouper has ruled; the
// grouper rules on every such pod. Both ask this one function, so neither
// waits for what the other never does.
func (k Kinds) Groupable(pod *corev1.Pod, scheduler string) bool {
	if len(k) == 0 || pod.Spec.SchedulerName != scheduler || pod.Spec.NodeName != "" || gang.NamesGroup(pod) {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	owner := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	for gk := range k {
		if slices.Contains(controllerKinds(gk), owner) {
			return true
		}
	}
	return false
}

// Strings are k's kinds as groupedKinds names them, sorted.
func (k Kinds) Strings() []string {
	out := make([]string, 0, len(k))
	for gk := range k {
		out = append(out, gk.String())
	}
	slices.Sort(out)
	return out
}
