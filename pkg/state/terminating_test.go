package state

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/test/builder"
)

func terminating(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.DeletionTimestamp = &metav1.Time{Time: t0}
	return p
}

// TestTerminatingPodKeepsCharge: a placed pod being deleted stays charged
// until it is gone and leaves its gang's ranks at once, whether the state
// saw it run or first sees it terminating after a restart (SPEC §3.7).
func TestTerminatingPodKeepsCharge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history func(s *State, pods []*corev1.Pod)
	}{
		{"seen running", func(s *State, pods []*corev1.Pod) {
			for _, p := range pods {
				s.OnPod(bound(p, "n"))
			}
			s.OnPod(terminating(bound(pods[0], "n")))
		}},
		{"first seen terminating", func(s *State, pods []*corev1.Pod) {
			s.OnPod(terminating(bound(pods[0], "n")))
			for _, p := range pods[1:] {
				s.OnPod(bound(p, "n"))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 4).Obj())
			s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
			s.OnPodGroup(podGroup("g", 2, nil))
			pods := []*corev1.Pod{member("g", 0), member("g", 1), member("g", 2)}
			tc.history(s, pods)

			if got := s.Cards("q")[h200].Allocated; got != 3 {
				t.Errorf("H200 allocated %d, want 3: the terminating pod is charged", got)
			}
			g := s.books.gangs[gang.Key("ns/g")]
			if len(g.placed) != 2 || len(g.members) != 2 {
				t.Errorf("gang has %d placed, %d members; want 2, 2: the terminating pod left it", len(g.placed), len(g.members))
			}
			if got := roles(s); got[2] != 0 {
				t.Errorf("elastic %d, want 0: the two running pods are the gang's min", got[2])
			}
			for _, p := range s.PlacedIn("q") {
				if p.Pod.Name == pods[0].Name {
					t.Errorf("the terminating pod is offered to preemption")
				}
			}
			s.OnPod(terminating(bound(pods[0], "n"))) // an update while it terminates
			relabelled := terminating(bound(pods[0], "n"))
			relabelled.Labels["cardinal.dev/queue"] = "other"
			relabelled.Generation++
			s.OnPod(relabelled)
			if got := s.Cards("q")[h200].Allocated; got != 3 {
				t.Errorf("after updates, H200 allocated %d, want 3", got)
			}
			s.OnPodDeleted(relabelled)
			if got := s.Cards("q")[h200].Allocated; got != 2 {
				t.Errorf("once gone, H200 allocated %d, want 2", got)
			}
			if len(g.placed) != 2 {
				t.Errorf("gang has %d placed after the delete, want 2", len(g.placed))
			}
		})
	}
}
