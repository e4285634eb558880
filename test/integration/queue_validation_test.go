package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestQueueValidation: the apiserver itself, through the CRD's schema and CEL
// rules, refuses queues that make no sense, naming the field (SPEC §1.1).
func TestQueueValidation(t *testing.T) {
	tests := []struct {
		name      string
		queue     *v1alpha1.Queue
		wantField string // empty: the queue is accepted
		wantMsg   string
	}{
		{
			name:  "valid queue with cards",
			queue: builder.MakeQueue("valid").Guarantee(corev1.ResourceCPU, "8").Capability(corev1.ResourceCPU, "64").Card("NVIDIA-H200", 3, 6).Obj(),
		},
		{
			// A guarantee of 0 is left out of the stored object.
			name:  "card with a capability and no guarantee",
			queue: builder.MakeQueue("borrow-only").Card("NVIDIA-H200", 0, 4).Obj(),
		},
		{
			name:      "capability below guarantee",
			queue:     builder.MakeQueue("cap-below").Guarantee(corev1.ResourceCPU, "8").Capability(corev1.ResourceCPU, "4").Obj(),
			wantField: "spec.capability",
			wantMsg:   "capability must be at least guarantee",
		},
		{
			name:      "capability below guarantee in other units",
			queue:     builder.MakeQueue("cap-below-units").Guarantee(corev1.ResourceMemory, "2Gi").Capability(corev1.ResourceMemory, "1024Mi").Obj(),
			wantField: "spec.capability",
			wantMsg:   "capability must be at least guarantee",
		},
		{
			name:      "negative guarantee",
			queue:     builder.MakeQueue("neg").Guarantee(corev1.ResourceCPU, "-1").Obj(),
			wantField: "spec.guarantee",
			wantMsg:   "guarantee must not be negative",
		},
		{
			name:      "negative card guarantee",
			queue:     withCards(builder.MakeQueue("neg-card").Obj(), v1alpha1.CardQuota{Name: "NVIDIA-H200", Guarantee: -1}),
			wantField: "spec.cards[0].guarantee",
		},
		{
			name:      "card capability below guarantee",
			queue:     builder.MakeQueue("card-below").Card("NVIDIA-H200", 3, 2).Obj(),
			wantField: "spec.cards[0].capability",
			wantMsg:   "capability must be at least guarantee",
		},
		{
			name:      "duplicate card names",
			queue:     builder.MakeQueue("dup").Card("NVIDIA-H200", 1, 1).Card("NVIDIA-H200", 2, 2).Obj(),
			wantField: "spec.cards[1]",
			wantMsg:   "Duplicate value",
		},
		{
			name:      "negative weight",
			queue:     builder.MakeQueue("neg-weight").Weight(-2).Obj(),
			wantField: "spec.weight",
		},
		{
			name: "namespaceSelector with labels and expressions",
			queue: withSelector(builder.MakeQueue("nsel-ok").Obj(), &metav1.LabelSelector{
				MatchLabels: map[string]string{"team": "a"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gpu"}},
					{Key: "frozen", Operator: metav1.LabelSelectorOpDoesNotExist},
				},
			}),
		},
		{
			name: "namespaceSelector with an unknown operator",
			queue: withSelector(builder.MakeQueue("nsel-op").Obj(), &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: "Like", Values: []string{"a"}},
			}}),
			wantField: "spec.namespaceSelector.matchExpressions",
			wantMsg:   "operator must be In, NotIn, Exists or DoesNotExist",
		},
		{
			name: "namespaceSelector In without values",
			queue: withSelector(builder.MakeQueue("nsel-in").Obj(), &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpIn},
			}}),
			wantField: "spec.namespaceSelector.matchExpressions",
			wantMsg:   "values must be given for In and NotIn, and only for them",
		},
		{
			name: "namespaceSelector Exists with values",
			queue: withSelector(builder.MakeQueue("nsel-exists").Obj(), &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpExists, Values: []string{"a"}},
			}}),
			wantField: "spec.namespaceSelector.matchExpressions",
			wantMsg:   "values must be given for In and NotIn, and only for them",
		},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.cardinal.SchedulingV1alpha1().Queues().Create(ctx, tc.queue, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("queue refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error naming %s, got %v", tc.wantField, err)
			}
			if !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not name field %q with %q", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}

// TestQueueDefaults: weight and reclaimable default as SPEC §1.1 says.
func TestQueueDefaults(t *testing.T) {
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}}
	got, err := env.cardinal.SchedulingV1alpha1().Queues().Create(context.Background(), q, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Weight != 1 || !ptr.Deref(got.Spec.Reclaimable, false) {
		t.Errorf("defaults: weight %d reclaimable %v, want 1 and true", got.Spec.Weight, got.Spec.Reclaimable)
	}
}

func withCards(q *v1alpha1.Queue, cards ...v1alpha1.CardQuota) *v1alpha1.Queue {
	q.Spec.Cards = cards
	return q
}

func withSelector(q *v1alpha1.Queue, sel *metav1.LabelSelector) *v1alpha1.Queue {
	q.Spec.NamespaceSelector = sel
	return q
}
