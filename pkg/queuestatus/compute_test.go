package queuestatus

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/test/builder"
)

// TestCardStatus: status.cards lists every model the queue lists or uses,
// sorted, with a one-line summary; a model used beyond its capability
// (the Queue was lowered, or never listed it) sets OverCapability.
func TestCardStatus(t *testing.T) {
	q := builder.MakeQueue("a").Card("NVIDIA-H200", 3, 6).Card("NVIDIA-A100", 1, 1).Obj()
	in := Input{
		Queues:    []v1alpha1.Queue{*q},
		Capacity:  quota.Resources{},
		Allocated: map[string]quota.Resources{},
		Cards:     map[string]map[string]int64{"a": {"NVIDIA-H200": 2, "NVIDIA-L40S": 1}},
	}
	st := Compute(in, metav1.Now())["a"]
	want := []v1alpha1.CardStatus{
		{Name: "NVIDIA-A100", Allocated: 0, Guarantee: 1, Capability: 1},
		{Name: "NVIDIA-H200", Allocated: 2, Guarantee: 3, Capability: 6},
		{Name: "NVIDIA-L40S", Allocated: 1, Guarantee: 0, Capability: 0},
	}
	if diff := cmp.Diff(want, st.Cards); diff != "" {
		t.Errorf("cards (-want, +got):\n%s", diff)
	}
	if want := "NVIDIA-A100=0/1,NVIDIA-H200=2/6,NVIDIA-L40S=1/0"; st.CardSummary != want {
		t.Errorf("summary %q, want %q", st.CardSummary, want)
	}
	c := meta.FindStatusCondition(st.Conditions, OverCapability)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "NVIDIA-L40S uses 1 cards of 0") {
		t.Errorf("OverCapability = %+v, want True naming NVIDIA-L40S", c)
	}
}
