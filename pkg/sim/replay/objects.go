package replay

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/contenders"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

const (
	// schedulerName is the profile every contender serves.
	schedulerName = "cardinal-scheduler"
	// jobLabel names a pod's trace job.
	jobLabel = "sim.cardinal.dev/job"
	// podGroupLabel is scheduler-plugins' gang label.
	podGroupLabel = "scheduling.x-k8s.io/pod-group"
	// defaultQueue is where jobs of a trace without queues go.
	defaultQueue = "default"
)

// namespaceOf is the namespace of a queue's jobs: one per queue, so that
// scheduler-plugins' ElasticQuota (one per namespace) can stand for it.
func namespaceOf(queue string) string { return "q-" + queue }

// nodesOf are the nodes of a group, named <group>-<i>, labelled as GPU
// feature discovery and the device plugin label them (SPEC §1.4).
func nodesOf(g trace.NodeGroup) []*corev1.Node {
	var out []*corev1.Node
	for i := range max(g.Count, 1) {
		out = append(out, nodeOf(g, fmt.Sprintf("%s-%d", g.Name, i)))
	}
	return out
}

func nodeOf(g trace.NodeGroup, name string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(orDefault(g.CPU, "64")),
		corev1.ResourceMemory: resource.MustParse(orDefault(g.Memory, "512Gi")),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	if g.Cards > 0 {
		n.Labels["nvidia.com/gpu.product"] = g.Model
		n.Labels["nvidia.com/gpu.count"] = strconv.Itoa(g.Cards)
		if g.MemoryMiB > 0 {
			n.Labels[cardmodel.NVIDIAMemoryLabel] = strconv.Itoa(g.MemoryMiB)
		}
		switch {
		case g.MIG != nil:
			n.Labels["nvidia.com/mig.strategy"] = "mixed"
			res[corev1.ResourceName("nvidia.com/mig-"+g.MIG.Profile)] = *resource.NewQuantity(int64(g.Cards*g.MIG.Slices), resource.DecimalSI)
		case g.MPS != nil:
			n.Labels[cardmodel.MPSReplicasLabel] = strconv.Itoa(g.MPS.Replicas)
			res[cardmodel.MPSResource] = *resource.NewQuantity(int64(g.Cards*g.MPS.Replicas), resource.DecimalSI)
		default:
			res["nvidia.com/gpu"] = *resource.NewQuantity(int64(g.Cards), resource.DecimalSI)
		}
	}
	n.Status.Allocatable, n.Status.Capacity = res, res.DeepCopy()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

// perCard is how many of a group's card units make one whole card.
func perCard(g trace.NodeGroup) int {
	switch {
	case g.MIG != nil:
		return g.MIG.Slices
	case g.MPS != nil:
		return g.MPS.Replicas
	}
	return 1
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// queueOf is the Cardinal Queue of a trace queue.
func queueOf(q trace.Queue) (*v1alpha1.Queue, error) {
	out := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q.Name}, Spec: v1alpha1.QueueSpec{Weight: max(q.Weight, 1), Reclaimable: q.Reclaimable}}
	var err error
	if out.Spec.Guarantee, err = resourceList(q.Guarantee); err != nil {
		return nil, fmt.Errorf("queue %s guarantee: %w", q.Name, err)
	}
	if out.Spec.Capability, err = resourceList(q.Capability); err != nil {
		return nil, fmt.Errorf("queue %s capability: %w", q.Name, err)
	}
	for _, c := range q.Cards {
		out.Spec.Cards = append(out.Spec.Cards, v1alpha1.CardQuota{Name: c.Name, Guarantee: c.Guarantee, Capability: c.Capability})
	}
	return out, nil
}

func resourceList(m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a quantity", k, v)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// elasticQuotaOf is scheduler-plugins' ElasticQuota standing for a queue:
// min its guarantee, max its capability, its card models added up by the
// resource pods request them through (CapacityScheduling knows resources,
// not models). A card resource none of the queue's models uses gets max 0,
// as Cardinal lets no queue use a model it does not list; cpu, memory and
// pods the queue does not cap get a min and max no cluster reaches, since
// CapacityScheduling caps a resource max leaves out at zero.
func elasticQuotaOf(q trace.Queue, resources map[string]corev1.ResourceName, cardResources []corev1.ResourceName) map[string]any {
	minList, maxList := map[string]any{}, map[string]any{}
	for _, r := range cardResources {
		maxList[string(r)] = "0"
	}
	minCards, maxCards := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	for _, c := range q.Cards {
		r := resources[c.Name]
		minCards[r] += int64(c.Guarantee)
		maxCards[r] += int64(ptr.Deref(c.Capability, c.Guarantee))
	}
	for r, n := range minCards {
		minList[string(r)] = strconv.FormatInt(n, 10)
	}
	for r, n := range maxCards {
		maxList[string(r)] = strconv.FormatInt(n, 10)
	}
	for _, r := range []string{"cpu", "memory", "pods"} {
		// In min too: CapacityScheduling turns away a pod beyond its
		// quota's min when the quotas' used, added up, pass their mins
		// added up, resource by resource; a resource no min names adds
		// up to zero, and every pod would be turned away for its cpu.
		v := map[string]string{"cpu": "1000000", "memory": "1000Ti", "pods": "1000000"}[r]
		minList[r], maxList[r] = v, v
	}
	for r, v := range q.Guarantee {
		minList[r] = v
	}
	for r, v := range q.Capability {
		maxList[r] = v
	}
	return map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
		"metadata": map[string]any{"name": q.Name, "namespace": namespaceOf(q.Name)},
		"spec":     map[string]any{"min": minList, "max": maxList},
	}
}

// priorityClassName names the PriorityClass of a priority value.
func priorityClassName(p int32) string {
	if p < 0 {
		return fmt.Sprintf("sim-priority-minus-%d", -int64(p))
	}
	return fmt.Sprintf("sim-priority-%d", p)
}

func priorityClass(p int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityClassName(p)}, Value: p,
		PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority)}
}

// managedBy marks the Jobs the simulator runs as their controller
// (spec.managedBy), so kube-controller-manager's Job controller leaves them
// alone.
const managedBy = "sim.cardinal.dev/replay"

// indexLabel is a pod's completion index in its job.
const indexLabel = "sim.cardinal.dev/index"

// jobFor is the batch/v1 Job a trace job is submitted as, for one
// contender: the same pods for every scheduler, each declaring its gang the
// way that scheduler reads one. Cardinal's grouper makes the PodGroup from
// the Job's cardinal.dev/min-member (SPEC §7); scheduler-plugins needs its
// PodGroup written by hand and the pod-group label (podGroupFor); the
// default profile has no gangs. The simulator plays the Job's controller
// (podFor): it makes the pods at submit and replaces an evicted one at
// once, as a training job restarts a lost worker, where the built-in Job
// controller would back off for minutes after repeated failures.
func jobFor(j trace.Job, queue string, pods podShape, contender string) *batchv1.Job {
	labels := map[string]string{jobLabel: j.Name, v1alpha1.QueueLabel: queue}
	podLabels := map[string]string{jobLabel: j.Name, v1alpha1.QueueLabel: queue}
	if j.Preemptibility != "" {
		labels[v1alpha1.PreemptibilityLabel] = j.Preemptibility
		podLabels[v1alpha1.PreemptibilityLabel] = j.Preemptibility
	}
	annotations := map[string]string{}
	switch contender {
	case contenders.Cardinal:
		if j.Pods > 1 {
			annotations[v1alpha1.MinMemberAnnotation] = strconv.Itoa(j.Min)
		}
	case contenders.SchedulerPlugins:
		if j.Pods > 1 {
			podLabels[podGroupLabel] = j.Name
		}
	}
	n := int32(j.Pods)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: namespaceOf(queue), Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			Parallelism:    &n,
			Completions:    &n,
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			ManagedBy:      ptr.To(managedBy),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: pods.annotations},
				Spec: corev1.PodSpec{
					SchedulerName:                 schedulerName,
					RestartPolicy:                 corev1.RestartPolicyNever,
					PriorityClassName:             priorityClassName(j.Priority),
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					NodeSelector:                  pods.nodeSelector,
					Affinity:                      pods.affinity,
					Containers: []corev1.Container{{
						Name: "work", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: pods.requests, Limits: pods.limits},
					}},
				},
			},
		},
	}
}

// podFor is pod index of a Job, its attempt-th try, as the Job's
// controller makes it: the template, owned by the Job.
func podFor(job *batchv1.Job, index, attempt int) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d-%d", job.Name, index, attempt), Namespace: job.Namespace,
			Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[indexLabel] = strconv.Itoa(index)
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
	return pod
}

// podGroupFor is the scheduler-plugins PodGroup of a gang job.
func podGroupFor(j trace.Job, queue string) *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: namespaceOf(queue), Labels: map[string]string{v1alpha1.QueueLabel: queue}},
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: int32(j.Min)},
	}
}

// podShape is what a job's pods ask for, worked out once per job from the
// trace's card models.
type podShape struct {
	requests, limits corev1.ResourceList
	annotations      map[string]string
	nodeSelector     map[string]string
	affinity         *corev1.Affinity
	// resource is the card resource, models the card models it may use,
	// first choice first (empty: any the queue lists), cards per pod.
	resource corev1.ResourceName
	products []string
	models   []string
	cards    int64
	// whole is the pod's cards in whole cards.
	whole float64
}

// shapeOf works out a job's pod shape. Card-name alternatives name
// products; a MIG or MPS job may use those products' slices or shares of
// its size, which Cardinal names as the cluster's nodes do (SPEC §1.4). The
// products become a required node affinity, and their order a preferred
// one, so schedulers that do not read cardinal.dev/card-name place the pods
// on the same models, preferring the same one.
func shapeOf(j trace.Job, c *catalog) (podShape, error) {
	s := podShape{requests: corev1.ResourceList{}, limits: corev1.ResourceList{}, annotations: map[string]string{}, cards: int64(j.Cards)}
	var err error
	if s.requests[corev1.ResourceCPU], err = resource.ParseQuantity(j.CPU); err != nil {
		return s, fmt.Errorf("job %s cpu: %w", j.Name, err)
	}
	if s.requests[corev1.ResourceMemory], err = resource.ParseQuantity(j.Memory); err != nil {
		return s, fmt.Errorf("job %s memory: %w", j.Name, err)
	}
	perCard := 1
	switch {
	case trace.MIGProfile(j.Resource) != "":
		s.resource = corev1.ResourceName("nvidia.com/mig-" + trace.MIGProfile(j.Resource))
		perCard = c.migSlices[trace.MIGProfile(j.Resource)]
	case trace.MPSReplicas(j.Resource) > 0:
		s.resource = cardmodel.MPSResource
		perCard = trace.MPSReplicas(j.Resource)
		s.nodeSelector = map[string]string{cardmodel.MPSReplicasLabel: strconv.Itoa(perCard)}
	default:
		s.resource = "nvidia.com/gpu"
	}
	s.whole = float64(j.Cards) / float64(max(perCard, 1))
	q := *resource.NewQuantity(int64(j.Cards), resource.DecimalSI)
	s.requests[s.resource], s.limits[s.resource] = q, q
	if j.CardName == "" {
		return s, nil
	}
	products := strings.Split(j.CardName, "|")
	var names []string
	for _, p := range products {
		for _, m := range c.modelsOf(p, s.resource, perCard) {
			names = append(names, m)
		}
	}
	if len(names) == 0 {
		return s, fmt.Errorf("job %s: no node has %s of %s", j.Name, s.resource, j.CardName)
	}
	s.models, s.products = names, products
	s.annotations[v1alpha1.CardNameAnnotation] = strings.Join(names, "|")
	var preferred []corev1.PreferredSchedulingTerm
	for i, p := range products {
		preferred = append(preferred, corev1.PreferredSchedulingTerm{
			Weight:     int32(max(100-i*100/len(products), 1)),
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{p}}}},
		})
	}
	s.affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: products}},
		}}},
		PreferredDuringSchedulingIgnoredDuringExecution: preferred,
	}}
	return s, nil
}
