package grouper

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"cardinal.dev/cardinal/pkg/workload"
)

// shape is what a workload's spec says of the gang it makes.
type shape struct {
	// full is how many pods the workload runs at once when none has
	// finished: the "max" of SPEC §7's table.
	full int32
	// now is full less what has finished: a Job's pods never outnumber the
	// completions it has left (KAI #1347). A gang's min is never above it.
	now int32
	// ownMin is the min the workload's own gang fields give (SPEC §7
	// rule 3), 0 when it has none; ownMinFrom names the field.
	ownMin     int32
	ownMinFrom string
	// templates are the pod templates it makes pods from, with how many
	// pods each makes.
	templates []podTemplate
}

// podTemplate is a pod template (a PodTemplateSpec, unstructured) and how
// many pods are made from it.
type podTemplate struct {
	spec  map[string]any
	count int32
}

// children lists the Jobs a JobSet controls, for their completions left.
type children func(owner *unstructured.Unstructured) []*unstructured.Unstructured

// shapeOf reads the shape of unit from its spec (and, for a JobSet, from
// the Jobs it made so far).
func shapeOf(u Unit, c Chain, jobsOf children) shape {
	obj := u.Obj
	switch {
	case u.Kind == workload.Job:
		return jobShape(obj)
	case u.Kind == workload.JobSet:
		return jobSetShape(obj, jobsOf)
	case u.Kind == workload.TrainJob:
		// A TrainJob runs through the JobSet it makes (SPEC §7 rule 3).
		if js := c.Find(workload.JobSet); js != nil {
			s := jobSetShape(js.Obj, jobsOf)
			s.ownMinFrom = "its JobSet's replicas × parallelism"
			return s
		}
		return shape{}
	case u.Kind == workload.LeaderWorkerSet:
		return lwsShape(obj)
	case workload.IsKubeflowTraining(u.Kind):
		return kubeflowShape(obj)
	case u.Kind == workload.RayCluster:
		return rayShape(obj)
	case u.Kind == workload.ReplicaSet, u.Kind == workload.StatefulSet:
		n := intField(obj, 1, "spec", "replicas")
		return shape{full: n, now: n, templates: templateAt(obj, n, "spec", "template")}
	}
	return shape{}
}

// jobShape: a Job runs parallelism pods at once, never more than the
// completions it has left; it has no gang fields of its own (KAI #2098: a
// Job is a gang only when annotated).
func jobShape(job *unstructured.Unstructured) shape {
	full := intField(job, 1, "spec", "parallelism")
	now := min(full, completionsLeft(job, full))
	return shape{full: full, now: now, templates: templateAt(job, now, "spec", "template")}
}

// completionsLeft is how many more of a Job's pods must succeed: its
// completions less those succeeded, or ifUnset for a Job without
// completions (any pod succeeding ends it).
func completionsLeft(job *unstructured.Unstructured, ifUnset int32) int32 {
	completions, set, _ := unstructured.NestedInt64(job.Object, "spec", "completions")
	if !set {
		return ifUnset
	}
	succeeded, _, _ := unstructured.NestedInt64(job.Object, "status", "succeeded")
	return int32(max(completions-succeeded, 0))
}

// jobSetShape: a JobSet runs Σ replicas × parallelism pods at once, and
// that is its min (SPEC §7 rule 3). Each of its Jobs counts no more than
// the completions it has left, so that the last pods of a Job whose
// completions are not a multiple of its parallelism do not wait for peers
// that will not come (KAI #1347).
func jobSetShape(js *unstructured.Unstructured, jobsOf children) shape {
	var s shape
	var made []*unstructured.Unstructured
	if jobsOf != nil {
		made = jobsOf(js)
	}
	var full, total int64
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	for _, item := range rjs {
		rj, ok := item.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(rj, "name")
		replicas := intIn(rj, 1, "replicas")
		parallelism := intIn(rj, 1, "template", "spec", "parallelism")
		completions, hasCompletions, _ := unstructured.NestedInt64(rj, "template", "spec", "completions")
		// Jobs not made yet run min(parallelism, completions) pods; those
		// made, no more than the completions they have left.
		first := int64(parallelism)
		if hasCompletions {
			first = min(first, max(completions, 0))
		}
		now := int64(replicas) * first
		for _, j := range made {
			// JobSet names its Jobs <jobset>-<replicatedJob>-<index>.
			index, ok := strings.CutPrefix(j.GetName(), js.GetName()+"-"+name+"-")
			if i, err := strconv.Atoi(index); ok && err == nil && i >= 0 && i < int(replicas) {
				now += int64(min(parallelism, completionsLeft(j, parallelism))) - first
			}
		}
		full += int64(replicas) * int64(parallelism)
		total += max(now, 0)
		if tmpl, ok, _ := unstructured.NestedMap(rj, "template", "spec", "template"); ok {
			s.templates = append(s.templates, podTemplate{spec: tmpl, count: capped(max(now, 0))})
		}
	}
	s.full, s.now = capped(full), capped(total)
	s.ownMin, s.ownMinFrom = s.now, "its replicas × parallelism"
	return s
}

// capped is a count summed in 64 bits, no more than maxCount.
func capped(n int64) int32 { return int32(min(max(n, 0), maxCount)) }

// lwsShape: a LeaderWorkerSet's group is its leader and size-1 workers,
// all of it its min.
func lwsShape(lws *unstructured.Unstructured) shape {
	size := intField(lws, 1, "spec", "leaderWorkerTemplate", "size")
	s := shape{full: size, now: size, ownMin: size, ownMinFrom: "its group size"}
	if _, ok, _ := unstructured.NestedMap(lws.Object, "spec", "leaderWorkerTemplate", "leaderTemplate"); ok {
		s.templates = append(templateAt(lws, 1, "spec", "leaderWorkerTemplate", "leaderTemplate"),
			templateAt(lws, size-1, "spec", "leaderWorkerTemplate", "workerTemplate")...)
	} else {
		s.templates = templateAt(lws, size, "spec", "leaderWorkerTemplate", "workerTemplate")
	}
	return s
}

// kubeflowShape: a Kubeflow training job runs Σ replicas pods; its min is
// runPolicy.schedulingPolicy.minAvailable, or, as Kubeflow's own gang
// integrations take it, every replica.
func kubeflowShape(job *unstructured.Unstructured) shape {
	var s shape
	var full int64
	spec, _, _ := unstructured.NestedMap(job.Object, "spec")
	keys := make([]string, 0, len(spec))
	for k := range spec {
		if strings.HasSuffix(k, "ReplicaSpecs") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		specs, _ := spec[k].(map[string]any)
		roles := make([]string, 0, len(specs))
		for role := range specs {
			roles = append(roles, role)
		}
		slices.Sort(roles)
		for _, role := range roles {
			rs, ok := specs[role].(map[string]any)
			if !ok {
				continue
			}
			n := intIn(rs, 1, "replicas")
			full += int64(n)
			if tmpl, ok, _ := unstructured.NestedMap(rs, "template"); ok {
				s.templates = append(s.templates, podTemplate{spec: tmpl, count: n})
			}
		}
	}
	s.full = capped(full)
	s.now = s.full
	s.ownMin, s.ownMinFrom = s.full, "its replicas"
	if m, ok, _ := unstructured.NestedInt64(job.Object, "spec", "runPolicy", "schedulingPolicy", "minAvailable"); ok && m > 0 {
		s.ownMin, s.ownMinFrom = int32(min(m, 1<<30)), "its runPolicy.schedulingPolicy.minAvailable"
	}
	return s
}

// rayShape: a Ray cluster is its head and its worker groups' replicas
// (times their hosts); its min is the head and the groups' minReplicas.
func rayShape(rc *unstructured.Unstructured) shape {
	s := shape{ownMinFrom: "its head and worker groups' minReplicas"}
	full, ownMin := int64(1), int64(1)
	s.templates = templateAt(rc, 1, "spec", "headGroupSpec", "template")
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	for _, item := range groups {
		g, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if suspended, _, _ := unstructured.NestedBool(g, "suspend"); suspended {
			continue
		}
		hosts := intIn(g, 1, "numOfHosts")
		minReplicas := intIn(g, 0, "minReplicas")
		replicas := max(intIn(g, minReplicas, "replicas"), minReplicas)
		full += int64(replicas) * int64(hosts)
		ownMin += int64(minReplicas) * int64(hosts)
		if tmpl, ok, _ := unstructured.NestedMap(g, "template"); ok {
			s.templates = append(s.templates, podTemplate{spec: tmpl, count: capped(int64(replicas) * int64(hosts))})
		}
	}
	s.full, s.ownMin = capped(full), capped(ownMin)
	s.now = s.full
	return s
}

// templateAt is the pod template at path in obj, making n pods.
func templateAt(obj *unstructured.Unstructured, n int32, path ...string) []podTemplate {
	tmpl, ok, _ := unstructured.NestedMap(obj.Object, path...)
	if !ok {
		return nil
	}
	return []podTemplate{{spec: tmpl, count: n}}
}

// intField reads a non-negative count at path in obj, def when unset.
func intField(obj *unstructured.Unstructured, def int32, path ...string) int32 {
	return intIn(obj.Object, def, path...)
}

// maxCount bounds a count read from a workload: no workload runs more pods
// than this, and sums of counts stay far from overflowing.
const maxCount = 1 << 20

func intIn(m map[string]any, def int32, path ...string) int32 {
	v, ok, err := unstructured.NestedFieldNoCopy(m, path...)
	if !ok || err != nil {
		return def
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int:
		n = int64(x)
	case float64:
		n = int64(x)
	default:
		return def
	}
	return int32(min(max(n, 0), maxCount))
}
