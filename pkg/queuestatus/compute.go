// Package queuestatus keeps each Queue's status: what its bound pods use,
// in resources and in cards of each model, its deserved share, and conditions that say when it is over its share or
// over its capability (after the cluster shrank or the Queue was edited).
// It is computed from the API alone, so it matches the bound pods whatever
// the scheduler holds in memory. pkg/controllers runs it.
package queuestatus

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/quota"
)

// Condition types on a Queue.
const (
	// OverDeserved is True while the queue uses more than its deserved share
	// of some resource: it is borrowing, and what it borrows may be reclaimed.
	OverDeserved = "OverDeserved"
	// OverCapability is True while the queue uses more than its capability,
	// which only happens when the Queue was lowered under running pods.
	OverCapability = "OverCapability"
)

// Input is everything the statuses are computed from.
type Input struct {
	Queues []v1alpha1.Queue
	// Capacity is the sum of the nodes' allocatable.
	Capacity quota.Resources
	// Allocated and Pending are, per queue, what bound pods use and what
	// pods not yet bound ask for.
	Allocated, Pending map[string]quota.Resources
	// Cards are, per queue, the cards of each model bound pods use.
	Cards map[string]map[string]int64
}

// Compute returns each queue's status (keyed by name), keeping the
// conditions' transition times from old.
func Compute(in Input, now metav1.Time) map[string]v1alpha1.QueueStatus {
	shares := make([]quota.QueueShare, 0, len(in.Queues))
	for _, q := range in.Queues {
		req := quota.Resources{}
		req.Add(in.Allocated[q.Name])
		req.Add(in.Pending[q.Name])
		shares = append(shares, quota.QueueShare{
			Name: q.Name, Weight: max(q.Spec.Weight, 1),
			Guarantee: quota.FromList(q.Spec.Guarantee), Capability: quota.FromList(q.Spec.Capability), Request: req,
		})
	}
	deserved := quota.Deserved(in.Capacity, shares)
	out := make(map[string]v1alpha1.QueueStatus, len(in.Queues))
	for _, q := range in.Queues {
		alloc := in.Allocated[q.Name]
		if alloc == nil {
			alloc = quota.Resources{}
		}
		quotas, _ := cardmodel.QueueCards(&q) // the scheduler reports a bad annotation
		cards, overCards := cardStatus(quotas, in.Cards[q.Name])
		st := v1alpha1.QueueStatus{
			Allocated:        alloc.ToList(),
			Deserved:         deserved[q.Name].ToList(),
			AllocatedSummary: alloc.String(),
			Cards:            cards,
			CardSummary:      cardSummary(cards),
			Conditions:       append([]metav1.Condition(nil), q.Status.Conditions...),
		}
		setCondition(&st, OverDeserved, over(alloc, deserved[q.Name], nil), "deserved share", now, q.Generation)
		setCondition(&st, OverCapability, append(over(alloc, quota.FromList(q.Spec.Capability), q.Spec.Capability), overCards...), "capability", now, q.Generation)
		out[q.Name] = st
	}
	return out
}

// over lists, in words, the resources where used exceeds limit. With only
// set, resources it does not list are not limited.
func over(used, limit quota.Resources, only corev1.ResourceList) []string {
	var out []string
	for name, v := range used {
		if _, listed := only[name]; only != nil && !listed {
			continue
		}
		if v > limit[name] {
			out = append(out, fmt.Sprintf("%s uses %s of %s", name, quota.Format(name, v), quota.Format(name, limit[name])))
		}
	}
	sort.Strings(out)
	return out
}

// cardStatus is the use of every model the queue lists or uses, sorted by
// name, and, in words, the models used beyond their capability.
func cardStatus(quotas map[string]cardmodel.Quota, used map[string]int64) ([]v1alpha1.CardStatus, []string) {
	models := make([]string, 0, len(quotas)+len(used))
	for m := range quotas {
		models = append(models, m)
	}
	for m := range used {
		if _, ok := quotas[m]; !ok {
			models = append(models, m)
		}
	}
	sort.Strings(models)
	var out []v1alpha1.CardStatus
	var excess []string
	for _, m := range models {
		q := quotas[m]
		out = append(out, v1alpha1.CardStatus{Name: m, Allocated: int32(used[m]), Guarantee: int32(q.Guarantee), Capability: int32(q.Capability)})
		if used[m] > q.Capability {
			excess = append(excess, fmt.Sprintf("%s uses %d cards of %d", m, used[m], q.Capability))
		}
	}
	return out, excess
}

// cardSummary is the cards in one line: model=allocated/capability.
func cardSummary(cards []v1alpha1.CardStatus) string {
	parts := make([]string, 0, len(cards))
	for _, c := range cards {
		parts = append(parts, fmt.Sprintf("%s=%d/%d", c.Name, c.Allocated, c.Capability))
	}
	return strings.Join(parts, ",")
}

func setCondition(st *v1alpha1.QueueStatus, typ string, excess []string, what string, now metav1.Time, gen int64) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: "Within", Message: "within its " + what, ObservedGeneration: gen, LastTransitionTime: now}
	if len(excess) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Exceeded", "over its "+what+": "+strings.Join(excess, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, c)
}
