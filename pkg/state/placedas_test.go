package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
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
			// Placed preemptible; its labels say non-preemptible now.
			p := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "relabelled").Label(v1alpha1.PreemptibilityLabel, v1alpha1.NonPreemptible).
				Annotation(v1alpha1.PlacedAsAnnotation, "q/"+v1alpha1.Preemptible).Req(corev1.ResourceCPU, "1").Obj()
			p.UID, p.Spec.NodeName = "p", "n"
			s.OnPod(p)
			if got := s.books.pods["p"].Queue; got != "q" {
				t.Fatalf("before its namespace arrived, the pod is booked to %q, want q as placed", got)
			}
			s.OnNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": tc.team}}})
			s.tick()
			e := s.books.pods["p"]
			if e.Queue != tc.want || (e.placedAs != nil) != tc.placed {
				t.Errorf("once synced: queue %q, booked as placed %v; want %q, %v", e.Queue, e.placedAs != nil, tc.want, tc.placed)
			}
			if len(s.books.unverified) != 0 {
				t.Errorf("%d placements left to verify", len(s.books.unverified))
			}
			// What was charged is given back as it was charged.
			for _, q := range []string{"q", "relabelled"} {
				u := s.QuotaUsage(q)
				for r, v := range u.NonPreemptible {
					if v < 0 {
						t.Errorf("queue %s: non-preemptible %s %d", q, r, v)
					}
				}
				for r, v := range u.Allocated {
					if v < 0 {
						t.Errorf("queue %s: allocated %s %d", q, r, v)
					}
				}
			}
		})
	}
}

// TestReserveRefusesWhatWasNotChecked: a pod relabelled between PreFilter
// and Reserve (another queue, non-preemptible, a queue its namespace may
// not use) is refused at Reserve, placed or not, so that what is booked is
// what was checked (SPEC §3.5, §3.7).
func TestReserveRefusesWhatWasNotChecked(t *testing.T) {
	checked := &Checked{Queue: "q", Class: "preemptible"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		ok     bool
		// why is the refusal Reserve gives, as a value.
		why refusal.Refusal
	}{
		{name: "unchanged", ok: true},
		{name: "relabelled non-preemptible", labels: map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible},
			why: refusal.Relabelled{What: "preemptibility", From: "preemptible", To: "non-preemptible"}},
		{name: "relabelled to another queue", labels: map[string]string{v1alpha1.QueueLabel: "other"},
			why: refusal.Relabelled{What: "queue", From: "q", To: "other"}},
		{name: "relabelled to a queue its namespace may not use", labels: map[string]string{v1alpha1.QueueLabel: "closed"},
			why: refusal.Relabelled{What: "queue", From: "q", To: "closed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			s.OnQueue(builder.MakeQueue("q").Obj())
			s.OnQueue(builder.MakeQueue("other").Obj())
			closed := builder.MakeQueue("closed").Obj()
			closed.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}
			s.OnQueue(closed)
			s.OnNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
			p := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "q").Req(corev1.ResourceCPU, "1").Obj()
			p.UID = "p"
			p.Spec.Priority = new(int32) // preemptible by priority
			s.OnPod(p)
			if len(tc.labels) > 0 {
				q := p.DeepCopy()
				for k, v := range tc.labels {
					q.Labels[k] = v
				}
				s.OnPod(q)
				p = q
			}
			st := s.ReserveAsChecked(p, "n", checked)
			if st.IsSuccess() != tc.ok {
				t.Errorf("Reserve: %v, want success %v", st, tc.ok)
			}
			if why, _ := refusal.As(st); !reflect.DeepEqual(why, tc.why) {
				t.Errorf("Reserve refused with %#v, want %#v", why, tc.why)
			}
			if placed := s.books.pods["p"].placed(); placed != tc.ok {
				t.Errorf("placed %v, want %v", placed, tc.ok)
			}
			// A refused pod is tried again at once under its new labels:
			// nothing else would wake it.
			fw := &fake.Framework{}
			s.Flush(fw)
			if woken := len(fw.Activated()) == 1; woken == tc.ok {
				t.Errorf("woken %v, want %v", fw.Activated(), !tc.ok)
			}
		})
	}
}
