package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// RunLabel marks every object of one seed's run (nodes, pods, Deployments),
// so the checks see only it and pods land only on its nodes.
const RunLabel = "soak.cardinal.dev/run"

// TeamLabel on a namespace names the team it belongs to; a queue that
// serves only its team selects it (spec.namespaceSelector).
const TeamLabel = "soak.cardinal.dev/team"

// The card models of the run's nodes.
const (
	h200    = "NVIDIA-H200"
	a100    = "NVIDIA-A100"
	h200MIG = "NVIDIA-H200/mig-1g.18gb-mixed"
	migRes  = corev1.ResourceName("nvidia.com/mig-1g.18gb")
)

// The priority classes: low is preemptible by the priority rule
// (preemptibleBelowPriority 100), the others are not.
var priorities = map[string]int32{"soak-low": 10, "soak-mid": 500, "soak-high": 1000}

var preemptibilities = []string{v1alpha1.Preemptible, v1alpha1.NonPreemptible, v1alpha1.SemiPreemptible}

// node is a node of the run as the runner made it: the model of each card
// resource it carries.
type node struct {
	name   string
	models map[corev1.ResourceName]string
}

// workload is a gang (with a PodGroup), a single pod or a Deployment.
type workload struct {
	kind     string // gang, pod, deployment
	name, ns string
	// queue is the queue its pods are charged to: the namespace's, or the
	// one a tenant's labels name.
	queue string
	// denied: a tenant's workload naming a queue its namespace may not use
	// (SPEC §1.1): none of its pods may bind.
	denied bool
	// min is its PodGroup's minMember now; minLow the lowest it has been.
	min, minLow int
	pods        []string // names of the pods the runner made (gangs and single pods)
	res         corev1.ResourceName
	cards       int64
	priority    string
	preempt     string // what its pods resolve to (SPEC §5.1), as the runner set it
	deleted     bool
	replicas    int32
	generated   int
	// timeout is the PodGroup's scheduleTimeoutSeconds, 0 if unset.
	timeout time.Duration
	// grace is its pods' terminationGracePeriodSeconds.
	grace int64
	// sidecar: its pods have a restartable init container asking a card
	// of their resource besides the main container's.
	sidecar bool
	// relabelledAt is when the run relabelled it non-preemptible, and
	// preemptAfter what pods placed from then on are (SPEC §3.7): pods
	// placed before keep preempt.
	relabelledAt time.Time
	preemptAfter string
}

// tenant is a namespace of the run that no queue is named after: its
// workloads name their queue by label.
type tenant struct {
	name string
	team string // its TeamLabel, "" for none
}

// world is what a seed's run made and still has.
type world struct {
	seed     uint64
	rng      *rand.Rand
	run      string // the RunLabel value
	queues   []*v1alpha1.Queue
	tenants  []tenant
	nodes    map[string]*node
	work     map[string]*workload // by ns/name
	nodeSeq  int
	workSeq  int
	faults   float64
	replicas int
	// changes are the run's changes to what queues ask for or the nodes
	// hold: a reclaim and its reverse with none between are capacity going
	// back and forth (SPEC §5.6). The ledger adds to them from its watch.
	changes changes
}

// current is the preemptibility of the workload's pods placed from now on.
func (wl *workload) current() string {
	if wl.preemptAfter != "" {
		return wl.preemptAfter
	}
	return wl.preempt
}

func (w *world) pick(n int) int { return w.rng.IntN(n) }

func (w *world) chance(p float64) bool { return w.rng.Float64() < p }

// makeQueues makes 2 to 4 queues, each with a namespace of its own, with
// quota for some card models (some through the Volcano annotation) and
// sometimes a cpu cap.
func (w *world) makeQueues() {
	n := 2 + w.pick(3)
	for i := range n {
		q := builder.MakeQueue(fmt.Sprintf("%s-q%d", w.run, i)).Weight(int32(1 + w.pick(3))).Obj()
		q.Spec.Reclaimable = ptr.To(w.chance(0.7))
		if w.chance(0.2) {
			q.Annotations = map[string]string{v1alpha1.VolcanoCardQuotaAnnotation: fmt.Sprintf(`{%q:%d}`, a100, 1+w.pick(4))}
		}
		for _, m := range []string{h200, a100, h200MIG} {
			if q.Annotations != nil && m == a100 || !w.chance(0.75) {
				continue
			}
			g := int32(w.pick(4))
			c := v1alpha1.CardQuota{Name: m, Guarantee: g}
			if w.chance(0.8) {
				c.Capability = ptr.To(g + int32(w.pick(7)))
			}
			q.Spec.Cards = append(q.Spec.Cards, c)
		}
		if w.chance(0.3) {
			q.Spec.Capability = corev1.ResourceList{corev1.ResourceCPU: *resourceQty(int64(4 + w.pick(12)))}
		}
		if w.chance(0.4) {
			q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{TeamLabel: q.Name}}
		}
		w.queues = append(w.queues, q)
	}
}

// makeTenants makes 1 or 2 tenant namespaces, each of one queue's team or
// of none.
func (w *world) makeTenants() {
	for i := range 1 + w.pick(2) {
		t := tenant{name: fmt.Sprintf("%s-t%d", w.run, i)}
		if j := w.pick(len(w.queues) + 1); j < len(w.queues) {
			t.team = w.queues[j].Name
		}
		w.tenants = append(w.tenants, t)
	}
}

// mayUse tells whether namespace ns (of team) may use queue q.
func mayUse(q *v1alpha1.Queue, team string) bool {
	sel := q.Spec.NamespaceSelector
	return sel == nil || len(sel.MatchLabels) == 0 || sel.MatchLabels[TeamLabel] == team
}

// newNode makes a node of a random kind: 4 or 8 H200, 4 A100, or an H200
// split into 7 MIG slices.
func (w *world) newNode() *corev1.Node {
	w.nodeSeq++
	name := fmt.Sprintf("%s-n%d", w.run, w.nodeSeq)
	b := builder.MakeNode(name).Label(RunLabel, w.run)
	n := &node{name: name, models: map[corev1.ResourceName]string{}}
	switch w.pick(4) {
	case 0:
		b.GPU(h200, 4)
		n.models[builder.GPUResource] = h200
	case 1:
		b.GPU(h200, 8)
		n.models[builder.GPUResource] = h200
	case 2:
		b.GPU(a100, 4)
		n.models[builder.GPUResource] = a100
	default:
		b.Res(migRes, "7").Label("nvidia.com/gpu.product", h200)
		n.models[migRes] = h200MIG
	}
	w.nodes[name] = n
	return b.Obj()
}

// newGang makes a gang of min..min+3 pods, each asking for 1 or 2 cards of
// one resource, with a priority and a preemptibility set at one of its
// sources (or left to the priority rule). A tenant's names its queue by
// label, on the PodGroup or the pods, a queue it may use or not.
func (w *world) newGang(single, ofTenant bool) (*workload, *schedv1alpha1.PodGroup, []*corev1.Pod) {
	w.workSeq++
	q := w.queues[w.pick(len(w.queues))]
	wl := &workload{kind: "gang", name: fmt.Sprintf("g%d", w.workSeq), ns: q.Name, queue: q.Name, min: 1 + w.pick(4)}
	n := wl.min + w.pick(4)
	if single {
		wl.kind, wl.name, wl.min, n = "pod", fmt.Sprintf("p%d", w.workSeq), 1, 1
	}
	wl.minLow = wl.min
	var groupLabels, podLabels map[string]string
	if ofTenant {
		t := w.tenants[w.pick(len(w.tenants))]
		wl.ns, wl.denied = t.name, !mayUse(q, t.team)
		l := map[string]string{v1alpha1.QueueLabel: q.Name}
		if !single && w.chance(0.5) {
			groupLabels = l
		} else {
			podLabels = l
		}
	}
	w.cardsOf(wl)
	w.podShape(wl)
	prioNames := []string{"soak-low", "soak-mid", "soak-high"}
	wl.priority = prioNames[w.pick(len(prioNames))]
	wl.preempt = byPriority(wl.priority)
	if w.chance(0.5) {
		v := preemptibilities[w.pick(len(preemptibilities))]
		if single && v == v1alpha1.SemiPreemptible {
			v = v1alpha1.Preemptible
		}
		if w.chance(0.1) {
			v = "sometimes" // invalid: falls back to the priority rule
		} else {
			wl.preempt = v
		}
		if !single && w.chance(0.5) {
			groupLabels = with(groupLabels, v1alpha1.PreemptibilityLabel, v)
		} else {
			podLabels = with(podLabels, v1alpha1.PreemptibilityLabel, v)
		}
	}
	var pg *schedv1alpha1.PodGroup
	if !single {
		pg = &schedv1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: wl.ns, Name: wl.name, Labels: groupLabels},
			Spec:       schedv1alpha1.PodGroupSpec{MinMember: int32(wl.min)},
		}
		if w.chance(0.3) {
			secs := int32(3 + w.pick(10))
			pg.Spec.ScheduleTimeoutSeconds = &secs
			wl.timeout = time.Duration(secs) * time.Second
		}
	}
	pods := make([]*corev1.Pod, 0, n)
	for range n {
		pods = append(pods, w.newPod(wl, podLabels))
	}
	w.work[wl.ns+"/"+wl.name] = wl
	return wl, pg, pods
}

// newPod makes the next pod of a gang or single-pod workload.
func (w *world) newPod(wl *workload, labels map[string]string) *corev1.Pod {
	wl.generated++
	name := wl.name
	if wl.kind == "gang" {
		name = fmt.Sprintf("%s-%d", wl.name, wl.generated)
	}
	b := builder.MakePod(wl.ns, name).Label(RunLabel, w.run).NodeSelector(RunLabel, w.run).
		Req(corev1.ResourceCPU, "500m").Extended(wl.res, int(wl.cards))
	if wl.kind == "gang" {
		b.Label(schedv1alpha1.PodGroupLabel, wl.name)
	}
	for k, v := range labels {
		b.Label(k, v)
	}
	if names := w.cardNames(wl.res); names != "" {
		b.CardName(names)
	}
	p := b.Obj()
	p.Spec.PriorityClassName = wl.priority
	shapePod(p, wl)
	wl.pods = append(wl.pods, name)
	return p
}

// podShape picks how a workload's pods end: most at once, some with a
// grace period the run's kubelet honours; and whether a sidecar asks a
// card too.
func (w *world) podShape(wl *workload) {
	wl.grace = []int64{0, 0, 0, 2, 5, 10}[w.pick(6)]
	wl.sidecar = wl.kind != "deployment" && w.chance(0.15)
}

// shapePod gives a pod its workload's grace period and sidecar: a
// restartable init container asking a card of the pod's card resource,
// which Kubernetes adds to the main container's (SPEC §4.1).
func shapePod(p *corev1.Pod, wl *workload) {
	p.Spec.TerminationGracePeriodSeconds = ptr.To(wl.grace)
	if !wl.sidecar {
		return
	}
	one := corev1.ResourceList{wl.res: *resourceQty(1)}
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
		Name: "sidecar", Image: p.Spec.Containers[0].Image, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{Requests: one, Limits: one},
	})
}

func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// newDeployment makes a Deployment of 1 to 3 one-card pods, its
// preemptibility sometimes on the Deployment (the pods' top-level owner).
func (w *world) newDeployment() (*workload, *appsv1.Deployment) {
	w.workSeq++
	q := w.queues[w.pick(len(w.queues))]
	wl := &workload{kind: "deployment", name: fmt.Sprintf("d%d", w.workSeq), ns: q.Name, queue: q.Name, min: 1, minLow: 1, replicas: int32(1 + w.pick(3))}
	w.cardsOf(wl)
	w.podShape(wl)
	wl.cards = 1
	wl.priority = []string{"soak-low", "soak-high"}[w.pick(2)]
	wl.preempt = byPriority(wl.priority)
	labels := map[string]string{RunLabel: w.run}
	if w.chance(0.5) {
		wl.preempt = []string{v1alpha1.Preemptible, v1alpha1.NonPreemptible}[w.pick(2)]
		labels[v1alpha1.PreemptibilityLabel] = wl.preempt
	}
	pod := builder.MakePod(wl.ns, "").Label(RunLabel, w.run).Label("app", wl.name).NodeSelector(RunLabel, w.run).
		Req(corev1.ResourceCPU, "500m").Extended(wl.res, 1).Obj()
	pod.Spec.PriorityClassName = wl.priority
	shapePod(pod, wl)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: wl.ns, Name: wl.name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(wl.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": wl.name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
		},
	}
	w.work[wl.ns+"/"+wl.name] = wl
	return wl, d
}

// cardsOf picks a workload's card resource and how many each pod asks.
func (w *world) cardsOf(wl *workload) {
	if w.chance(0.25) {
		wl.res, wl.cards = migRes, 1
		return
	}
	wl.res, wl.cards = builder.GPUResource, int64(1+w.pick(2))
}

// cardNames picks a card-name annotation for a resource: none, one model,
// or alternatives.
func (w *world) cardNames(res corev1.ResourceName) string {
	if res == migRes {
		if w.chance(0.5) {
			return h200MIG
		}
		return ""
	}
	switch w.pick(4) {
	case 0:
		return h200
	case 1:
		return a100
	case 2:
		return h200 + "|" + a100
	}
	return ""
}

// byPriority is SPEC §5.1's fallback: preemptible below priority 100.
func byPriority(class string) string {
	if priorities[class] < 100 {
		return v1alpha1.Preemptible
	}
	return v1alpha1.NonPreemptible
}

// liveWork lists the workloads not deleted, of one kind ("" any), in a
// fixed order so a seed replays.
func (w *world) liveWork(kind string) []*workload {
	var out []*workload
	for _, k := range sortedKeys(w.work) {
		wl := w.work[k]
		if !wl.deleted && (kind == "" || wl.kind == kind) {
			out = append(out, wl)
		}
	}
	return out
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ensurePriorityClasses makes the run's priority classes.
func ensurePriorityClasses(ctx context.Context, c clients) error {
	for name, v := range priorities {
		pc := priorityClass(name, v)
		if _, err := c.kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
