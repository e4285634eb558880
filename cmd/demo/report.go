package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// report prints each Cardinal pod's queue, node and card model, then each
// PodGroup, then each queue's status with its use of each card model.
func report(ctx context.Context, w io.Writer, cfg *rest.Config) error {
	v, err := look(ctx, cfg)
	if err != nil {
		return err
	}
	if err := v.pods(w, func(*corev1.Pod) bool { return true }); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := reportGangs(ctx, w, cfg); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return reportQueues(ctx, w, cfg)
}

// reportAct prints what an act placed (the pods it made, and those its
// workloads' controllers made) and the PodGroups Cardinal made for them,
// what it evicted (pods there before that are gone) with the reason
// Cardinal gave each, what preemption said it did, and the queues' use of
// card models.
func reportAct(ctx context.Context, w io.Writer, cfg *rest.Config, before map[string]bool) error {
	v, err := look(ctx, cfg)
	if err != nil {
		return err
	}
	// The act's pods: those it made, and those its workloads' controllers
	// made for it.
	mine := func(p *corev1.Pod) bool { return !before[p.Namespace+"/"+p.Name] }
	if err := v.pods(w, mine); err != nil {
		return err
	}
	if err := reportMadeGangs(ctx, w, cfg, v, mine); err != nil {
		return err
	}
	now := map[string]bool{}
	for i := range v.list {
		now[v.list[i].Namespace+"/"+v.list[i].Name] = true
	}
	var gone []string
	for k := range before {
		if !now[k] {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	fmt.Fprintln(w)
	if len(gone) == 0 {
		fmt.Fprintln(w, "Nothing was evicted.")
	} else {
		events, err := evictionEvents(ctx, cfg, gone)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "EVICTED\tWHY")
		for _, k := range gone {
			fmt.Fprintf(tw, "%s\t%s\n", k, orDash(events[k]))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if note := events[preemptingKey]; note != "" {
			fmt.Fprintf(w, "\n%s\n", note)
		}
	}
	fmt.Fprintln(w)
	return reportQueues(ctx, w, cfg)
}

// view is what the pod table needs from the API, read once.
type view struct {
	list     []corev1.Pod
	cards    map[string]cardmodel.Node
	nsLabels map[string]map[string]string
	pgLabels map[string]map[string]string
	warnings map[string]string
}

func look(ctx context.Context, cfg *rest.Config) (*view, error) {
	kube := kubernetes.NewForConfigOrDie(cfg)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	v := &view{cards: map[string]cardmodel.Node{}}
	for i := range nodes.Items {
		v.cards[nodes.Items[i].Name] = cardmodel.Detect(&nodes.Items[i])
	}
	if v.nsLabels, err = namespaceLabels(ctx, kube); err != nil {
		return nil, err
	}
	if v.pgLabels, err = podGroupLabels(ctx, cfg); err != nil {
		return nil, err
	}
	pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if v.warnings, err = latestWarnings(ctx, kube); err != nil {
		return nil, err
	}
	v.list = pods.Items
	sort.Slice(v.list, func(i, j int) bool {
		a, b := v.list[i], v.list[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return v, nil
}

// pods prints the table of Cardinal's pods that keep says to show.
func (v *view) pods(w io.Writer, keep func(*corev1.Pod) bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tQUEUE\tNODE\tCARD MODEL\tCARDS\tSTATUS")
	for i := range v.list {
		p := &v.list[i]
		if p.Spec.SchedulerName != "cardinal-scheduler" || !keep(p) {
			continue
		}
		pg := v.pgLabels[p.Namespace+"/"+p.Labels["scheduling.x-k8s.io/pod-group"]]
		queue := workload.QueueName(pg, p.Labels, v.nsLabels[p.Namespace], v1alpha1.DefaultQueueName)
		node, model, count, status := "-", "-", "-", string(p.Status.Phase)
		if p.Spec.NodeName == "" {
			status = "Pending: " + shorten(unschedulableMessage(p, v.warnings), 110)
		} else {
			node = p.Spec.NodeName
			var models []string
			var counts []string
			for m, n := range v.cards[node].PodCards(p) {
				models = append(models, m)
				counts = append(counts, fmt.Sprint(n))
			}
			if len(models) > 0 {
				model, count = strings.Join(models, ","), strings.Join(counts, ",")
			}
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, queue, node, model, count, status)
	}
	return tw.Flush()
}

// reportMadeGangs prints the PodGroups Cardinal made for the workloads of
// the pods mine keeps (SPEC 7), if any: which workload each is for, its
// min, and how many of its pods are scheduled.
func reportMadeGangs(ctx context.Context, w io.Writer, cfg *rest.Config, v *view, mine func(*corev1.Pod) bool) error {
	groups := map[string]bool{}
	for i := range v.list {
		if p := &v.list[i]; mine(p) && p.Labels["scheduling.x-k8s.io/pod-group"] != "" {
			groups[p.Namespace+"/"+p.Labels["scheduling.x-k8s.io/pod-group"]] = true
		}
	}
	list, err := pgclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var made []string
	for _, pg := range list.Items {
		if by := pg.Annotations[v1alpha1.GroupedByAnnotation]; by != "" && groups[pg.Namespace+"/"+pg.Name] {
			made = append(made, fmt.Sprintf("%s/%s	%s	%d	%s", pg.Namespace, pg.Name, by, pg.Spec.MinMember, pg.Annotations["cardinal.dev/scheduled"]))
		}
	}
	if len(made) == 0 {
		return nil
	}
	sort.Strings(made)
	fmt.Fprintln(w, "\nPodGroups Cardinal made for the workloads (nobody wrote them):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PODGROUP\tFOR\tMIN\tSCHEDULED")
	for _, row := range made {
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// reportGangs prints each PodGroup's phase, as Cardinal keeps it.
func reportGangs(ctx context.Context, w io.Writer, cfg *rest.Config) error {
	list, err := pgclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PODGROUP\tMIN\tSCHEDULED\tPHASE\tWAITING")
	for _, pg := range list.Items {
		waiting := shorten(pg.Annotations["cardinal.dev/waiting-reason"], 110)
		if waiting == "" {
			waiting = "-"
		}
		fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%s\t%s\n", pg.Namespace, pg.Name, pg.Spec.MinMember, pg.Annotations["cardinal.dev/scheduled"], pg.Status.Phase, waiting)
	}
	return tw.Flush()
}

// reportQueues prints each queue's status as Cardinal writes it: resources,
// deserved share, and per card model the cards bound pods use against the
// queue's guarantee and capability.
func reportQueues(ctx context.Context, w io.Writer, cfg *rest.Config) error {
	queues, err := cardinalclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().Queues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tWEIGHT\tALLOCATED\tDESERVED\tBORROWING")
	for _, q := range queues.Items {
		borrowing := "no"
		if c := meta.FindStatusCondition(q.Status.Conditions, "OverDeserved"); c != nil && c.Status == metav1.ConditionTrue {
			borrowing = "yes: " + c.Message
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", q.Name, q.Spec.Weight, orDash(q.Status.AllocatedSummary), orDash(quota.FromList(q.Status.Deserved).String()), shorten(borrowing, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tCARD MODEL\tALLOCATED\tGUARANTEE\tCAPABILITY")
	for _, q := range queues.Items {
		for _, c := range q.Status.Cards {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", q.Name, c.Name, c.Allocated, c.Guarantee, c.Capability)
		}
	}
	return tw.Flush()
}

// unschedulableMessage is why a pod waits: its PodScheduled condition, or
// for a pod held before it is tried (a gang held by its queue), the latest
// warning event about it.
func unschedulableMessage(p *corev1.Pod, warnings map[string]string) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Message
		}
	}
	if w := warnings[p.Namespace+"/"+p.Name]; w != "" {
		return w
	}
	return "not scheduled yet"
}

// latestWarnings maps namespace/name of each pod to its latest warning event.
func latestWarnings(ctx context.Context, kube kubernetes.Interface) (map[string]string, error) {
	list, err := kube.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].EventTime.Before(&list.Items[j].EventTime) })
	out := map[string]string{}
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && e.Regarding.Kind == "Pod" {
			out[e.Regarding.Namespace+"/"+e.Regarding.Name] = e.Note
		}
	}
	return out, nil
}

func namespaceLabels(ctx context.Context, kube kubernetes.Interface) (map[string]map[string]string, error) {
	list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, ns := range list.Items {
		out[ns.Name] = ns.Labels
	}
	return out, nil
}

// preemptingKey holds, in evictionEvents' answer, what preemption told the
// preemptors it evicted for them.
const preemptingKey = ""

// evictionEvents maps each evicted pod (namespace/name) to the reason
// Cardinal gave it, and preemptingKey to what preemption told each
// preemptor. Events are written in the background: it waits a little for
// every evicted pod's.
func evictionEvents(ctx context.Context, cfg *rest.Config, gone []string) (map[string]string, error) {
	kube := kubernetes.NewForConfigOrDie(cfg)
	out := map[string]string{}
	var preempting []string
	for wait := 0; wait < 20; wait++ {
		list, err := kube.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		preempting = preempting[:0]
		for _, e := range list.Items {
			k := e.Regarding.Namespace + "/" + e.Regarding.Name
			switch {
			case e.Regarding.Kind == "Pod" && (e.Reason == "Reclaimed" || e.Reason == "Preempted"):
				out[k] = e.Reason + ": " + e.Note
			case e.Reason == "Preempting":
				preempting = append(preempting, fmt.Sprintf("%s %s: %s", e.Regarding.Kind, k, e.Note))
			}
		}
		all := true
		for _, k := range gone {
			all = all && out[k] != ""
		}
		if all && len(preempting) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	sort.Strings(preempting)
	out[preemptingKey] = strings.Join(preempting, "\n")
	return out, nil
}

// podKeys are namespace/name of every pod.
func podKeys(ctx context.Context, kube kubernetes.Interface) (map[string]bool, error) {
	list, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(list.Items))
	for _, p := range list.Items {
		out[p.Namespace+"/"+p.Name] = true
	}
	return out, nil
}

// podGroupLabels maps namespace/name of each PodGroup to its labels.
func podGroupLabels(ctx context.Context, cfg *rest.Config) (map[string]map[string]string, error) {
	list, err := pgclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, pg := range list.Items {
		out[pg.Namespace+"/"+pg.Name] = pg.Labels
	}
	return out, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shorten keeps a table readable; kubectl describe shows the whole message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
