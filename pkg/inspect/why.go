package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/refusal"
)

// Answer says, in sentences, where a pod or gang stands and why.
type Answer struct {
	// Object is what was asked about: "pod NS/NAME" or "podgroup NS/NAME".
	Object string `json:"object"`
	// State is Waiting, Running, Evicted or Finished.
	State string `json:"state"`
	// Why is the reason, as the scheduler's own decision code gives it. For
	// a waiting gang it is the sentence its PodGroup's
	// cardinal.dev/waiting-reason annotation carries.
	Why string `json:"why"`
	// Fix says what would let it run; empty when nothing is needed.
	Fix string `json:"fix,omitempty"`
	// Since is when the scheduler last said so, when it did.
	Since *metav1.Time `json:"since,omitempty"`
}

// States of an Answer.
const (
	Waiting  = "Waiting"
	Running  = "Running"
	Evicted  = "Evicted"
	Finished = "Finished"
)

// WhyPod answers for one pod.
func (c *Cluster) WhyPod(ctx context.Context, namespace, name string) (Answer, error) {
	a := Answer{Object: fmt.Sprintf("pod %s/%s", namespace, name)}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.gone(ctx, a, "Pod", namespace, name)
	}
	if err != nil {
		return a, err
	}
	if pod.Spec.SchedulerName != c.Settings.SchedulerName {
		a.State = stateOf(pod)
		a.Why = fmt.Sprintf("pod %s/%s is not scheduled by Cardinal: its schedulerName is %q, not %q", namespace, name, pod.Spec.SchedulerName, c.Settings.SchedulerName)
		if a.State == Waiting {
			a.Fix = fmt.Sprintf("set schedulerName: %s on the pod (its template) for Cardinal to place it", c.Settings.SchedulerName)
		}
		return a, nil
	}
	if cond := disruption(pod); cond != nil {
		a.State, a.Why, a.Since = Evicted, cond.Message, &cond.LastTransitionTime
		return a, nil
	}
	if pod.Spec.NodeName != "" {
		a.State = stateOf(pod)
		a.Why = c.placedSentence(pod)
		return a, nil
	}
	if a.State = stateOf(pod); a.State != Waiting {
		a.Why = fmt.Sprintf("pod %s/%s ended (%s) before it was scheduled", namespace, name, pod.Status.Phase)
		return a, nil
	}
	why, plugin, r := c.waitReason(ctx, pod)
	a.Why = why
	a.Fix = c.fix(pod, plugin, r)
	if cond := scheduledCondition(pod); cond != nil && cond.Message == why {
		a.Since = &cond.LastTransitionTime
	}
	return a, nil
}

// WhyPodGroup answers for a gang: its PodGroup's numbers and the reason of
// its first pod that waits, in the order its pods are placed.
func (c *Cluster) WhyPodGroup(ctx context.Context, namespace, name string) (Answer, error) {
	a := Answer{Object: fmt.Sprintf("podgroup %s/%s", namespace, name)}
	pg, err := c.podGroups.PodGroups(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.gone(ctx, a, "PodGroup", namespace, name)
	}
	if err != nil {
		return a, err
	}
	pods, err := c.gangPods(pg)
	if err != nil {
		return a, err
	}
	// The gang's reason: a hold or backoff, else what the checks find for
	// its first waiting pod, quoted as the annotation quotes a pod.
	first := firstWaiting(pods)
	reason, plugin, quoted := "", "", ""
	var why refusal.Refusal
	if first != nil {
		reason, plugin, why = c.waitReason(ctx, first)
		gangWhy := c.held(gang.KeyOf(pg))
		if gangWhy == nil {
			gangWhy = c.backingOff(pg)
		}
		if gangWhy != nil {
			why, reason, quoted = gangWhy, gangWhy.String(), gangWhy.String()
		} else {
			quoted = podgroupstatus.PodReason(first, reason)
		}
	}
	s := podgroupstatus.Compute(pg, pods, quoted)
	switch {
	case s.WaitingReason != "":
		a.State, a.Why = Waiting, s.WaitingReason
		if first != nil {
			a.Fix = c.fix(first, plugin, why)
		} else {
			a.Fix = fmt.Sprintf("create %d more pods of the gang, or lower its minMember", int(pg.Spec.MinMember)-len(pods))
		}
	case s.Phase == schedv1alpha1.PodGroupFinished || s.Phase == schedv1alpha1.PodGroupFailed:
		a.State = Finished
		a.Why = fmt.Sprintf("gang %s/%s is %s: %d pods succeeded, %d failed", namespace, name, s.Phase, s.Succeeded, s.Failed)
	default:
		a.State = Running
		a.Why = fmt.Sprintf("gang %s/%s has its min: %d of minMember %d pods scheduled, %d running", namespace, name, s.Scheduled, pg.Spec.MinMember, s.Running)
		if first != nil {
			a.Why += fmt.Sprintf("; elastic pod %s waits: %s", first.Name, reason)
			a.Fix = c.fix(first, plugin, why)
		}
	}
	if ev := c.lastEviction(ctx, namespace, "PodGroup", name); ev != "" && a.State != Running {
		a.Why += "; last evicted: " + ev
	}
	return a, nil
}

// waitReason runs the scheduler profile's own checks on a pod that waits,
// in the scheduler's order: admission (PreEnqueue), then PreFilter, then
// Filter on every node. It returns the first refusal, with the plugin that
// refused, in the scheduler's words and as the value it was built from
// (nil for words of no Cardinal refusal). A pod that passes them all waits
// on something only the running scheduler knows (another gang being placed
// at Permit, a backoff, room kept for a preemptor): that is read from what
// the scheduler last wrote on the pod and its PodGroup.
func (c *Cluster) waitReason(ctx context.Context, pod *corev1.Pod) (reason, plugin string, r refusal.Refusal) {
	if len(pod.Spec.SchedulingGates) > 0 {
		names := make([]string, 0, len(pod.Spec.SchedulingGates))
		for _, g := range pod.Spec.SchedulingGates {
			names = append(names, g.Name)
		}
		return fmt.Sprintf("pod %s/%s has scheduling gates %s: it is not tried until whoever set them removes them", pod.Namespace, pod.Name, strings.Join(names, ", ")), gatesPlugin, nil
	}
	for _, pl := range c.Framework.PreEnqueuePlugins() {
		if st := pl.PreEnqueue(ctx, pod); !st.IsSuccess() {
			return st.Message(), pl.Name(), refusalOf(pl.Name(), st)
		}
	}
	if pg := c.podGroupOf(pod); pg != nil {
		if b := c.backingOff(pg); b != nil {
			return b.String(), schedulerPlugin, b
		}
	}
	cs := framework.NewCycleState()
	nodes, err := c.snapshot.NodeInfos().List()
	if err != nil {
		return err.Error(), "", nil
	}
	fit := &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: framework.Diagnosis{
		NodeToStatus: framework.NewDefaultNodeToStatus(), UnschedulablePlugins: sets.New[string](),
	}}
	result, st, _ := c.Framework.RunPreFilterPlugins(ctx, cs, pod)
	if !st.IsSuccess() {
		if st.Code() == fwk.Error {
			return fmt.Sprintf("the scheduler's checks failed on pod %s/%s: %v", pod.Namespace, pod.Name, st.AsError()), st.Plugin(), nil
		}
		fit.Diagnosis.PreFilterMsg = st.Message()
		return c.scheduled(pod, fit.Error()), st.Plugin(), refusalOf(st.Plugin(), st)
	}
	feasible, failed := 0, map[string]int{}
	for _, ni := range nodes {
		if result != nil && !result.AllNodes() && !result.NodeNames.Has(ni.Node().Name) {
			continue
		}
		st := c.Framework.RunFilterPlugins(ctx, cs, pod, ni)
		if st.IsSuccess() {
			feasible++
			continue
		}
		fit.Diagnosis.NodeToStatus.Set(ni.Node().Name, st)
		failed[st.Plugin()]++
		if nr := refusalOf(st.Plugin(), st); nr != nil && (r == nil || telling(nr) < telling(r)) {
			r = nr
		}
	}
	if feasible == 0 {
		return c.scheduled(pod, fit.Error()), mostCommon(failed), r
	}
	if cond := scheduledCondition(pod); cond != nil && cond.Message != "" {
		return cond.Message, schedulerPlugin, c.runtimeRefusal(pod, cond.Message)
	}
	return fmt.Sprintf("pod %s/%s fits on %d of %d nodes now: the scheduler has not tried it since they freed", pod.Namespace, pod.Name, feasible, len(nodes)), "", nil
}

// scheduled returns what the scheduler last wrote on the pod when it says
// the same as the read-only checks found and more (what its PostFilter
// added); else what the checks found, which is how things stand now.
func (c *Cluster) scheduled(pod *corev1.Pod, found string) string {
	if cond := scheduledCondition(pod); cond != nil && strings.HasPrefix(cond.Message, found) {
		return cond.Message
	}
	return found
}

// backingOff is the backoff the scheduler wrote on a PodGroup while it
// lasts, or nil: a gang backing off is not tried, so none of its pods says
// so. It must be the one the PodGroup's waiting reason tells: the two are
// written together.
func (c *Cluster) backingOff(pg *schedv1alpha1.PodGroup) refusal.Refusal {
	b, ok := waitingRefusal(pg).(refusal.BackingOff)
	if !ok || !c.State.Now().Before(b.Until) || !strings.Contains(pg.Annotations[podgroupstatus.WaitingReasonAnnotation], b.String()) {
		return nil
	}
	return b
}

// podGroupOf is the PodGroup of pod's gang, or nil.
func (c *Cluster) podGroupOf(pod *corev1.Pod) *schedv1alpha1.PodGroup {
	k, ok := gang.Of(pod)
	if !ok {
		return nil
	}
	ns, name := k.Split()
	pg, err := c.podGroups.PodGroups(ns).Get(name)
	if err != nil {
		return nil
	}
	return pg
}

// held is why the state holds a gang back from admission, or nil.
func (c *Cluster) held(k gang.Key) refusal.Refusal {
	g, ok := c.State.GangStatus(k)
	if !ok {
		return nil
	}
	return g.HeldBy()
}

// placedSentence says where a bound pod runs and in what role.
func (c *Cluster) placedSentence(pod *corev1.Pod) string {
	where := fmt.Sprintf("pod %s/%s is on node %s", pod.Namespace, pod.Name, pod.Spec.NodeName)
	if model := c.cardModels(pod); model != "" {
		where += fmt.Sprintf(" (%s)", model)
	}
	ch, ok := c.State.ChargeOf(pod)
	if ok {
		where += fmt.Sprintf(", charged to queue %s", ch.Queue)
	}
	k, inGang := gang.Of(pod)
	if !inGang {
		return where
	}
	g, _ := c.State.GangStatus(k)
	role := "a min member"
	if ok && ch.Elastic {
		role = "an elastic pod (beyond its min; preempted first)"
	}
	return fmt.Sprintf("%s as %s of gang %s (%d placed, minMember %d)", where, role, k, g.Placed, g.Min)
}

func (c *Cluster) cardModels(pod *corev1.Pod) string {
	n, ok := c.State.Node(pod.Spec.NodeName)
	if !ok {
		return ""
	}
	var models []string
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, card := range n.Cards {
		if q, ok := req[card.Resource]; ok && !q.IsZero() && !slices.Contains(models, card.Model) {
			models = append(models, card.Model)
		}
	}
	return strings.Join(models, ", ")
}

// gone answers for an object that no longer exists: evicted, if an
// eviction event names it.
func (c *Cluster) gone(ctx context.Context, a Answer, kind, namespace, name string) (Answer, error) {
	if why := c.lastEviction(ctx, namespace, kind, name); why != "" {
		a.State, a.Why = Evicted, why
		return a, nil
	}
	return a, apierrors.NewNotFound(corev1.Resource(strings.ToLower(kind)), name)
}

// lastEviction is the newest Preempted or Reclaimed event about an object,
// or "".
func (c *Cluster) lastEviction(ctx context.Context, namespace, kind, name string) string {
	sel := fields.Set{"regarding.name": name, "regarding.kind": kind}.AsSelector().String()
	list, err := c.client.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return ""
	}
	var newest time.Time
	why := ""
	for _, ev := range list.Items {
		if ev.Reason != "Preempted" && ev.Reason != "Reclaimed" {
			continue
		}
		t := ev.EventTime.Time
		if ev.Series != nil {
			t = ev.Series.LastObservedTime.Time
		}
		if t.IsZero() {
			t = ev.CreationTimestamp.Time
		}
		if why == "" || t.After(newest) {
			newest, why = t, ev.Note
		}
	}
	return why
}

// gangPods are a PodGroup's pods of Cardinal's profile.
func (c *Cluster) gangPods(pg *schedv1alpha1.PodGroup) ([]*corev1.Pod, error) {
	sel := labels.SelectorFromSet(labels.Set{schedv1alpha1.PodGroupLabel: pg.Name})
	all, err := c.pods.Pods(pg.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, p := range all {
		if p.Spec.SchedulerName == c.Settings.SchedulerName {
			out = append(out, p)
		}
	}
	return out, nil
}

// firstWaiting is the gang's pod that is placed first among those that
// wait (gang.Less), or nil.
func firstWaiting(pods []*corev1.Pod) *corev1.Pod {
	var first *corev1.Pod
	for _, p := range pods {
		if podgroupstatus.Waits(p) && (first == nil || gang.Less(p, first)) {
			first = p
		}
	}
	return first
}

func stateOf(pod *corev1.Pod) string {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return Finished
	case pod.Spec.NodeName != "":
		return Running
	}
	return Waiting
}

func disruption(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func scheduledCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func mostCommon(counts map[string]int) string {
	best, n := "", 0
	for k, v := range counts {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	return best
}
