package grouper

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/workload"
)

// Unit is what one gang is made for (SPEC §7's "one gang per"): a Job, a
// JobSet, one group of a LeaderWorkerSet, a Kubeflow job, a TrainJob, a
// Ray cluster, a ReplicaSet or a StatefulSet.
type Unit struct {
	Kind schema.GroupKind
	Obj  *unstructured.Unstructured
	// Group is a LeaderWorkerSet group's index, "" for other kinds.
	Group string
}

// lwsGroupLabel is the label LeaderWorkerSet sets on a group's pods.
const lwsGroupLabel = "leaderworkerset.sigs.k8s.io/group-index"

// unitOf picks the gang a pod's chain makes: the highest owner of a kind
// kinds groups. A Deployment's gang is its ReplicaSet (one per rollout
// step), a RayJob's its RayCluster (its submitter Job is not in it), a
// LeaderWorkerSet's one group. nil when no owner is of such a kind.
func unitOf(c Chain, kinds workload.Kinds) *Unit {
	for i := len(c.Links) - 1; i >= 0; i-- {
		l := c.Links[i]
		switch {
		case l.Kind == workload.Deployment && kinds[workload.Deployment]:
			if rs := c.Find(workload.ReplicaSet); rs != nil {
				return &Unit{Kind: workload.ReplicaSet, Obj: rs.Obj}
			}
		case l.Kind == workload.ReplicaSet && kinds[workload.Deployment]:
			return &Unit{Kind: workload.ReplicaSet, Obj: l.Obj}
		case l.Kind == workload.RayJob && kinds[workload.RayJob]:
			if rc := c.Find(workload.RayCluster); rc != nil {
				return &Unit{Kind: workload.RayCluster, Obj: rc.Obj}
			}
		case l.Kind == workload.LeaderWorkerSet && kinds[l.Kind]:
			return &Unit{Kind: l.Kind, Obj: l.Obj, Group: c.Pod.Labels[lwsGroupLabel]}
		case kinds[l.Kind]:
			return &Unit{Kind: l.Kind, Obj: l.Obj}
		}
	}
	return nil
}

// Plan is the PodGroup a pod's workload needs.
type Plan struct {
	Unit Unit
	// Name is the PodGroup's name: the workload's (and a
	// LeaderWorkerSet's group index), cut to 63 characters, as the pod
	// label that joins it must be.
	Name     string
	Min, Max int32
	// MinResources is what the gang's min asks for at least (resources.go).
	MinResources corev1.ResourceList
	// Labels are the queue and preemptibility labels the PodGroup carries,
	// and CardRequest its card-request annotation ("" for none): the
	// top-level owner's, else the workload's, else its pod templates'.
	Labels      map[string]string
	CardRequest string
	// MinFrom says where Min comes from, for the log.
	MinFrom string
}

// GroupedBy is the value of the PodGroup's cardinal.dev/grouped-by
// annotation: Kind/name[/group].
func (p *Plan) GroupedBy() string {
	s := p.Unit.Kind.Kind + "/" + p.Unit.Obj.GetName()
	if p.Unit.Group != "" {
		s += "/" + p.Unit.Group
	}
	return s
}

// Problem is bad input the grouper met (SPEC §7), for a warning event on
// the object that carries it.
type Problem struct {
	Reason  string
	On      *unstructured.Unstructured
	Message string
}

// Reasons of the grouper's warning events (SPEC §7).
const (
	ReasonInvalidMinMember     = "InvalidMinMember"
	ReasonMinMemberAboveSize   = "MinMemberAboveSize"
	ReasonPodGroupNameConflict = "PodGroupNameConflict"
	ReasonOwnerUnreadable      = "OwnerUnreadable"
	// ReasonPodGroupNotMade: the grouper could not make a workload's
	// PodGroup (RBAC, its CRD, a quota); its pods run alone.
	ReasonPodGroupNotMade = "PodGroupNotMade"
	// ReasonStartedAlone: a workload annotated after its pods started
	// alone; its new pods run alone too (normal event).
	ReasonStartedAlone = "StartedAlone"
)

// PlanFor decides a pod's gang by SPEC §7's rules, first match wins, from
// its owner chain: (1, a pod that names a PodGroup, is the caller's); (2)
// the cardinal.dev/min-member annotation of the pod's controller, then of
// its top-level owner; (3) the workload's own gang fields; (4) else no
// gang: nil. A min that is not a positive integer is a problem and the
// next rule is tried; one above the workload's size is a problem and is
// clamped. A min above what the workload runs now (a Job's completions
// left) is lowered without one: that is the workload running down.
func PlanFor(c Chain, kinds workload.Kinds, jobsOf children) (*Plan, []Problem) {
	u := unitOf(c, kinds)
	if u == nil {
		return nil, nil
	}
	s := shapeOf(*u, c, jobsOf)
	var problems []Problem
	var gangMin int32
	from := ""
	for _, l := range annotated(c, u) {
		v, ok := l.Obj.GetAnnotations()[v1alpha1.MinMemberAnnotation]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n <= 0 {
			problems = append(problems, Problem{Reason: ReasonInvalidMinMember, On: l.Obj, Message: fmt.Sprintf(
				"%s %s has annotation %s=%q, which is not a positive integer: it is ignored; set it to the number of pods that must run together",
				l.Kind.Kind, l.Obj.GetName(), v1alpha1.MinMemberAnnotation, v)})
			continue
		}
		gangMin, from = int32(n), fmt.Sprintf("annotation %s on %s %s", v1alpha1.MinMemberAnnotation, l.Kind.Kind, l.Obj.GetName())
		if gangMin > s.full {
			problems = append(problems, Problem{Reason: ReasonMinMemberAboveSize, On: l.Obj, Message: fmt.Sprintf(
				"%s %s has annotation %s=%d, above the %d pods it runs: its gang's min is %d",
				l.Kind.Kind, l.Obj.GetName(), v1alpha1.MinMemberAnnotation, n, s.full, s.full)})
			gangMin = s.full
		}
		break
	}
	if gangMin == 0 && s.ownMin > 0 {
		gangMin, from = s.ownMin, s.ownMinFrom
		if gangMin > s.full {
			problems = append(problems, Problem{Reason: ReasonMinMemberAboveSize, On: u.Obj, Message: fmt.Sprintf(
				"%s %s asks, by %s, for a min of %d, above the %d pods it runs: its gang's min is %d",
				u.Kind.Kind, u.Obj.GetName(), from, gangMin, s.full, s.full)})
			gangMin = s.full
		}
	}
	if gangMin == 0 {
		return nil, problems
	}
	// Never more than the workload runs now, never below one.
	gangMin = max(1, min(gangMin, s.now))
	p := &Plan{
		Unit:         *u,
		Name:         podGroupName(u),
		Min:          gangMin,
		Max:          max(s.now, gangMin),
		MinResources: minResources(s.templates, gangMin),
		Labels:       map[string]string{},
	}
	// From the workload, then its pod templates in a fixed order: never
	// from the pod at hand, whose template may differ from its siblings'
	// (a PyTorchJob's master and workers), so that every pod of the gang
	// plans the same PodGroup.
	sources := []map[string]string{}
	annotations := []map[string]string{}
	for _, o := range []*unstructured.Unstructured{topObj(c), u.Obj} {
		if o != nil {
			sources = append(sources, o.GetLabels())
			annotations = append(annotations, o.GetAnnotations())
		}
	}
	for _, t := range s.templates {
		l, _, _ := unstructured.NestedStringMap(t.spec, "metadata", "labels")
		a, _, _ := unstructured.NestedStringMap(t.spec, "metadata", "annotations")
		sources = append(sources, l)
		annotations = append(annotations, a)
	}
	for _, key := range []string{v1alpha1.QueueLabel, v1alpha1.PreemptibilityLabel} {
		for _, l := range sources {
			if v, ok := l[key]; ok {
				p.Labels[key] = v
				break
			}
		}
	}
	for _, a := range annotations {
		if v := a[v1alpha1.CardRequestAnnotation]; v != "" {
			p.CardRequest = v
			break
		}
		if v := a[v1alpha1.VolcanoCardRequestAnnotation]; v != "" {
			p.CardRequest = v
			break
		}
	}
	p.MinFrom = from
	return p, problems
}

// annotated are the owners whose min-member annotation counts (SPEC §7
// rule 2): the pod's controller, then its top-level owner. Where the gang
// is of a workload above the pod's controller (a JobSet's Jobs, a
// LeaderWorkerSet's StatefulSets), the controllers differ between the
// gang's pods and may be annotated differently (a JobSet copies each
// replicated job's annotations onto its Jobs): the gang's workload and
// its top-level owner count then, so that every pod plans the same min.
func annotated(c Chain, u *Unit) []Link {
	ctrl, top := c.Controller(), c.Top()
	if ctrl == nil {
		return nil
	}
	first := *ctrl
	if ctrl.Obj.GetUID() != u.Obj.GetUID() {
		first = Link{Kind: u.Kind, Obj: u.Obj}
	}
	if top.Obj.GetUID() == first.Obj.GetUID() {
		return []Link{first}
	}
	return []Link{first, *top}
}

func topObj(c Chain) *unstructured.Unstructured {
	if t := c.Top(); t != nil {
		return t.Obj
	}
	return nil
}

// maxName is the longest PodGroup name Cardinal makes: the pods' label
// scheduling.x-k8s.io/pod-group holds it, and a label value is at most 63
// characters.
const maxName = 63

// podGroupName is the PodGroup's name: the workload's, with a
// LeaderWorkerSet group's index; a longer one is cut and ends with a hash
// of the whole, so two long names stay apart.
func podGroupName(u *Unit) string {
	name := u.Obj.GetName()
	if u.Group != "" {
		name += "-" + u.Group
	}
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])[:10]
	cut := strings.TrimRight(name[:maxName-len(h)-1], "-.")
	return cut + "-" + h
}
