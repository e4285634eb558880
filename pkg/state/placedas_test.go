package state

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestPlacementReadBeforeNamespace: after a restart, a bound pod whose
// namespace has not arrived yet is booked as its placed-as annotation
// says, not by its labels, and judged once the state has synced: kept
// when its namespace may use the queue, booked by its labels when it may
// not (SPEC §1.1, §3.7). Informers deliver in no order.
func TestPlacementReadBeforeNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, team, want string
		placed           bool
	}{
		{name: "namespace may use the queue", team: "a", want: "q", placed: true},
		{name: "namespace may not use the queue", team: "b", want: "relabelled", placed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			q := builder.MakeQueue("q").Obj()
			q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
			s.OnQueue(q)
			s.OnQueue(builder.MakeQueue("relabelled").Obj())
			// Placed in q, then relabelled to another queue.
			p := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "relabelled").
				Annotation(v1alpha1.PlacedAsAnnotation, "q/"+v1alpha1.Preemptible).Req(corev1.ResourceCPU, "1").Obj()
			p.UID, p.Spec.NodeName = "p", "n"
			s.OnPod(p)
			if got := s.pods["p"].Queue; got != "q" {
				t.Fatalf("before its namespace arrived, the pod is booked to %q, want q as placed", got)
			}
			s.OnNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": tc.team}}})
			s.tick()
			e := s.pods["p"]
			if e.Queue != tc.want || (e.placedAs != nil) != tc.placed {
				t.Errorf("once synced: queue %q, booked as placed %v; want %q, %v", e.Queue, e.placedAs != nil, tc.want, tc.placed)
			}
			if len(s.unverified) != 0 {
				t.Errorf("%d placements left to verify", len(s.unverified))
			}
		})
	}
}
