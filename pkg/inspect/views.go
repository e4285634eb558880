package inspect

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
)

// QueueRow is one queue's numbers for one resource or card model, as the
// scheduler decides with them (SPEC §3.2). Amounts are in the user's units
// (cores, binary quantities, cards); Capability is "" when not capped.
type QueueRow struct {
	Queue string `json:"queue"`
	// Resource is a resource name, or, with Card, a card model.
	Resource    string `json:"resource"`
	Card        bool   `json:"card,omitempty"`
	Weight      int32  `json:"weight"`
	Reclaimable bool   `json:"reclaimable"`
	// Namespaces is the queue's namespaceSelector in words; "*" when every
	// namespace may use it (SPEC §1.1).
	Namespaces string `json:"namespaces"`
	Guarantee  string `json:"guarantee"`
	Deserved   string `json:"deserved"`
	Allocated  string `json:"allocated"`
	Capability string `json:"capability"`
	Pending    string `json:"pending"`
	// Borrowed is what it uses beyond its deserved share: what queues
	// below theirs may reclaim.
	Borrowed       string `json:"borrowed"`
	Elastic        string `json:"elastic"`
	NonPreemptible string `json:"nonPreemptible"`
}

// Queues returns a row per queue and resource, then per queue and card
// model, for every Queue that exists, ordered by queue.
func Queues(st *state.State) []QueueRow {
	statuses := st.QueueStatuses()
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].Queue.Name < statuses[j].Queue.Name })
	var rows []QueueRow
	for _, qs := range statuses {
		u := qs.Usage
		base := QueueRow{Queue: qs.Queue.Name, Weight: max(qs.Queue.Spec.Weight, 1), Reclaimable: ptr.Deref(qs.Queue.Spec.Reclaimable, true), Namespaces: "*"}
		if sel := qs.Queue.Spec.NamespaceSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
			base.Namespaces = metav1.FormatLabelSelector(sel)
		}
		names := map[corev1.ResourceName]bool{}
		for _, r := range []quota.Resources{u.Guarantee, u.Capability, u.Allocated, u.Pending, u.Deserved} {
			for n := range r {
				names[n] = true
			}
		}
		sorted := make([]corev1.ResourceName, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		for _, n := range sorted {
			row := base
			f := func(v int64) string { return quota.Format(n, v) }
			row.Resource = string(n)
			row.Guarantee, row.Deserved, row.Allocated, row.Pending = f(u.Guarantee[n]), f(u.Deserved[n]), f(u.Allocated[n]), f(u.Pending[n])
			if c, ok := u.Capability[n]; ok {
				row.Capability = f(c)
			}
			row.Borrowed = f(max(u.Allocated[n]-u.Deserved[n], 0))
			row.Elastic, row.NonPreemptible = f(u.Elastic[n]), f(u.NonPreemptible[n])
			rows = append(rows, row)
		}
		models := make([]string, 0, len(u.Cards))
		for m := range u.Cards {
			models = append(models, m)
		}
		sort.Strings(models)
		for _, m := range models {
			c := u.Cards[m]
			row := base
			f := func(v int64) string { return quota.Format("", v) }
			row.Resource, row.Card = m, true
			row.Guarantee, row.Deserved, row.Allocated, row.Pending = f(c.Guarantee), f(c.Deserved), f(c.Allocated), f(c.Pending)
			row.Capability = f(c.Capability)
			if !c.Listed {
				row.Capability = "none"
			}
			row.Borrowed = f(max(c.Allocated-c.Deserved, 0))
			row.Elastic, row.NonPreemptible = f(c.Elastic), f(c.NonPreemptible)
			rows = append(rows, row)
		}
	}
	return rows
}

// GangRow is one gang: its PodGroup's min, what is placed of it, its phase
// and why it waits.
type GangRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Queue     string `json:"queue"`
	Min       int32  `json:"min"`
	Pods      int    `json:"pods"`
	Placed    int    `json:"placed"`
	Elastic   int    `json:"elastic"`
	Phase     string `json:"phase"`
	// Waiting is the PodGroup's cardinal.dev/waiting-reason: why the gang
	// waits, as the scheduler last wrote it, or, where the scheduler holds
	// the gang back, what this view's admission checks say.
	Waiting string `json:"waiting,omitempty"`
}

// Gangs returns a row per PodGroup in namespace ("" for all), ordered by
// namespace and name.
func (c *Cluster) Gangs(_ context.Context, namespace string) ([]GangRow, error) {
	var pgs []*schedv1alpha1.PodGroup
	var err error
	if namespace == "" {
		pgs, err = c.podGroups.List(labels.Everything())
	} else {
		pgs, err = c.podGroups.PodGroups(namespace).List(labels.Everything())
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(pgs, func(i, j int) bool {
		if pgs[i].Namespace != pgs[j].Namespace {
			return pgs[i].Namespace < pgs[j].Namespace
		}
		return pgs[i].Name < pgs[j].Name
	})
	rows := make([]GangRow, 0, len(pgs))
	for _, pg := range pgs {
		pods, err := c.gangPods(pg)
		if err != nil {
			return nil, err
		}
		k := gang.KeyOf(pg)
		g, _ := c.State.GangStatus(k)
		row := GangRow{Namespace: pg.Namespace, Name: pg.Name, Min: pg.Spec.MinMember, Pods: len(pods), Placed: g.Placed, Elastic: g.Elastic(), Phase: string(pg.Status.Phase)}
		if first := firstWaiting(pods); first != nil {
			row.Queue = c.State.QueueOf(first) // holds were judged at Load
		} else if len(pods) > 0 {
			row.Queue = c.State.QueueOf(pods[0])
		}
		if row.Phase == "" {
			row.Phase = string(podgroupstatus.Compute(pg, pods, "").Phase)
		}
		if held := c.held(k); held != nil {
			row.Waiting = podgroupstatus.Compute(pg, pods, held.String()).WaitingReason
		} else {
			row.Waiting = pg.Annotations[podgroupstatus.WaitingReasonAnnotation]
		}
		rows = append(rows, row)
	}
	return rows, nil
}
