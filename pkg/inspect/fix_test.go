package inspect

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/podgroupstatus"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/statetest"
)

// TestFix: what would let a pod run is the fix of the refusal the checks
// gave, as a value; room is freed differently for elastic pods, and
// kube-scheduler's own words for a lack of room name the resource.
func TestFix(t *testing.T) {
	c := &Cluster{State: statetest.New(), Settings: state.DefaultSettings()}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	quota := refusal.QuotaExceeded{Queue: "a", Resource: "cpu", Requested: 2000, WouldUse: 5000, Capability: 4000}
	tests := []struct {
		name, plugin string
		st           *fwk.Status
		want         string
	}{
		{"a Cardinal refusal", "CardinalQueue", refusal.Status(fwk.Unschedulable, quota), quota.Fix()},
		{"no room", "NodeResourcesFit", fwk.NewStatus(fwk.Unschedulable, "Too many pods", "Insufficient nvidia.com/gpu"),
			"free nvidia.com/gpu on nodes: running pods ending, nodes added, or preemption when its queue is below its deserved share (pods that are non-preemptible are never evicted)"},
		{"gates", gatesPlugin, nil, "remove the scheduling gates once what set them is satisfied"},
		{"words of no Cardinal refusal", "VolumeBinding", fwk.NewStatus(fwk.Unschedulable, "node(s) had volume node affinity conflict"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r refusal.Refusal
			if tc.st != nil {
				r = refusalOf(tc.plugin, tc.st)
			}
			if got := c.fix(pod, tc.plugin, r); got != tc.want {
				t.Errorf("fix:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestTelling: of the refusals different nodes give, the queue's quota
// says most, room least.
func TestTelling(t *testing.T) {
	order := []refusal.Refusal{
		refusal.QuotaExceeded{}, refusal.GuaranteeExceeded{}, refusal.NoModelQuota{}, refusal.NoModelOnNode{},
		refusal.UnlabelledCards{}, refusal.ModelsUnknown{}, refusal.RoomKept{}, refusal.Insufficient{},
	}
	for i := 1; i < len(order); i++ {
		if telling(order[i-1]) > telling(order[i]) {
			t.Errorf("%T ranks after %T", order[i-1], order[i])
		}
	}
}

// TestBackingOffAsWritten: a backoff is read from the PodGroup only while
// it lasts and as the waiting reason beside it tells it.
func TestBackingOffAsWritten(t *testing.T) {
	c := &Cluster{State: statetest.New(), Settings: state.DefaultSettings()}
	b := refusal.BackingOff{Gang: "ns/g", Until: c.State.Now().Add(time.Hour), After: "x"}
	pg := func(reason string, r refusal.BackingOff) *schedv1alpha1.PodGroup {
		enc, _ := refusal.Encode(r)
		return &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			podgroupstatus.WaitingReasonAnnotation: reason, podgroupstatus.WaitingRefusalAnnotation: enc}}}
	}
	tests := []struct {
		name string
		pg   *schedv1alpha1.PodGroup
		want bool
	}{
		{"as written", pg("0 of minMember 2 pods scheduled; "+b.String(), b), true},
		{"over", pg("0 of minMember 2 pods scheduled; "+b.String(), refusal.BackingOff{Gang: "ns/g", Until: c.State.Now().Add(-time.Second), After: "x"}), false},
		{"not what the waiting reason says", pg("0 of minMember 2 pods scheduled; queue q has insufficient cpu quota", b), false},
	}
	for _, tc := range tests {
		if got := c.backingOff(tc.pg) != nil; got != tc.want {
			t.Errorf("%s: backing off %v, want %v", tc.name, got, tc.want)
		}
	}
}
