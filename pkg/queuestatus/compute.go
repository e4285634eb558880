// Package queuestatus writes each Queue's status from the numbers the
// scheduler decides with (pkg/state): what its bound and reserved pods use,
// in resources and in cards of each model, its deserved share of each, and
// conditions that say when it is over its share or over its capability
// (after the cluster shrank or the Queue was edited). A status may lag the
// scheduler by a second; it never disagrees with it (SPEC §1.1, §3.2).
package queuestatus

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/state"
)

// Condition types on a Queue.
const (
	// OverDeserved is True while the queue uses more than its deserved share
	// of some resource or card model: it is borrowing, and what it borrows
	// may be reclaimed.
	OverDeserved = "OverDeserved"
	// OverCapability is True while the queue uses more than its capability,
	// which only happens when the Queue was lowered under running pods.
	OverCapability = "OverCapability"
)

// Compute is a Queue's status from the scheduler's numbers for it, keeping
// its conditions' transition times.
func Compute(qs state.QueueStatus, now metav1.Time) v1alpha1.QueueStatus {
	u := qs.Usage
	cards := cardStatus(u.Cards)
	st := v1alpha1.QueueStatus{
		Allocated:        u.Allocated.ToList(),
		Deserved:         u.Deserved.ToList(),
		AllocatedSummary: u.Allocated.String(),
		Cards:            cards,
		CardSummary:      cardSummary(cards),
		Conditions:       append([]metav1.Condition(nil), qs.Queue.Status.Conditions...),
	}
	overDeserved := over(u.Allocated, u.Deserved, false)
	// A resource the Queue's capability leaves out is not capped (SPEC §1.1):
	// a queue with card quota only is never over a capability of cpu.
	overCapability := over(u.Allocated, u.Capability, true)
	for _, c := range cards {
		if c.Allocated > c.Deserved {
			overDeserved = append(overDeserved, fmt.Sprintf("%s uses %d cards of %d", c.Name, c.Allocated, c.Deserved))
		}
		if c.Allocated > c.Capability {
			overCapability = append(overCapability, fmt.Sprintf("%s uses %d cards of %d", c.Name, c.Allocated, c.Capability))
		}
	}
	setCondition(&st, OverDeserved, overDeserved, "deserved share", now, qs.Queue.Generation)
	setCondition(&st, OverCapability, overCapability, "capability", now, qs.Queue.Generation)
	return st
}

// over lists, in words, the resources where used exceeds limit. With
// onlyListed, a resource limit does not list is not limited; without it, a
// resource it does not list is limited to 0.
func over(used, limit quota.Resources, onlyListed bool) []string {
	var out []string
	for name, v := range used {
		l, listed := limit[name]
		if onlyListed && !listed {
			continue
		}
		if v > l {
			out = append(out, fmt.Sprintf("%s uses %s of %s", name, quota.Format(name, v), quota.Format(name, limit[name])))
		}
	}
	sort.Strings(out)
	return out
}

// cardStatus is the use of every model the queue lists or uses, sorted by name.
func cardStatus(cards map[string]state.CardUsage) []v1alpha1.CardStatus {
	models := make([]string, 0, len(cards))
	for m, c := range cards {
		if c.Listed || c.Allocated > 0 {
			models = append(models, m)
		}
	}
	sort.Strings(models)
	var out []v1alpha1.CardStatus // nil when empty, as the API returns it
	for _, m := range models {
		c := cards[m]
		out = append(out, v1alpha1.CardStatus{Name: m, Allocated: int32(c.Allocated), Guarantee: int32(c.Guarantee), Capability: int32(c.Capability), Deserved: int32(c.Deserved)})
	}
	return out
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
