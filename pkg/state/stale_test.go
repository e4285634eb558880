package state

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"cardinal.dev/cardinal/test/builder"
)

// TestStaleGangs: a gang is stale once bound below its min, with nothing
// waiting to bind, for StaleGangAfter; gangs at or above it are never
// stale (SPEC §2.6).
func TestStaleGangs(t *testing.T) {
	const after = 2 * time.Minute
	for _, tc := range []struct {
		name  string
		min   int32
		pods  func() []*corev1.Pod
		after time.Duration
		// wait is how long after the last pod the state is asked.
		wait  time.Duration
		stale int // bound pods of the stale gang; 0: none stale
	}{
		{"below min, long enough", 3, func() []*corev1.Pod { return []*corev1.Pod{bound(member("g", 0), "n"), bound(member("g", 1), "n")} }, after, after, 2},
		{"below min, not yet", 3, func() []*corev1.Pod { return []*corev1.Pod{bound(member("g", 0), "n"), bound(member("g", 1), "n")} }, after, after - time.Second, 0},
		{"turned off", 3, func() []*corev1.Pod { return []*corev1.Pod{bound(member("g", 0), "n")} }, 0, time.Hour, 0},
		{"exactly at min", 2, func() []*corev1.Pod { return []*corev1.Pod{bound(member("g", 0), "n"), bound(member("g", 1), "n")} }, after, time.Hour, 0},
		{"elastic beyond min", 1, func() []*corev1.Pod { return []*corev1.Pod{bound(member("g", 0), "n"), bound(member("g", 1), "n")} }, after, time.Hour, 0},
		{"a member failed", 2, func() []*corev1.Pod {
			p := bound(member("g", 1), "n")
			p.Status.Phase = corev1.PodFailed
			return []*corev1.Pod{bound(member("g", 0), "n"), p}
		}, after, after, 1},
		{"nothing bound", 2, func() []*corev1.Pod { return []*corev1.Pod{member("g", 0)} }, after, time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newTestState(func(s *Settings) { s.StaleGangAfter = tc.after })
			s.OnQueue(builder.MakeQueue("q").Card(h200, 8, 8).Obj())
			s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
			s.OnPodGroup(podGroup("g", tc.min, nil))
			for _, p := range tc.pods() {
				s.OnPod(p)
			}
			clk.Step(tc.wait)
			got := s.StaleGangs()
			switch {
			case tc.stale == 0 && len(got) > 0:
				t.Errorf("stale gangs %v, want none", got)
			case tc.stale > 0 && (len(got) != 1 || len(got[0].Pods) != tc.stale || got[0].Bound != tc.stale):
				t.Errorf("stale gangs %+v, want one with %d bound pods", got, tc.stale)
			}
		})
	}
}

// twoOfThreeBound is a state, stale after a minute, with gang g of min 3
// bound at 2 pods on node n.
func twoOfThreeBound() (*State, *testingclock.FakeClock) {
	s, clk := newTestState(func(s *Settings) { s.StaleGangAfter = time.Minute })
	s.OnQueue(builder.MakeQueue("q").Card(h200, 8, 8).Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnPodGroup(podGroup("g", 3, nil))
	s.OnPod(bound(member("g", 0), "n"))
	s.OnPod(bound(member("g", 1), "n"))
	return s, clk
}

// TestStaleGangHealed: a gang whose min is bound again, or whose min is
// lowered to what is bound, is no longer stale.
func TestStaleGangHealed(t *testing.T) {
	s, clk := twoOfThreeBound()
	clk.Step(30 * time.Second)
	s.OnPodGroup(podGroup("g", 2, nil))
	clk.Step(time.Hour)
	if got := s.StaleGangs(); len(got) > 0 {
		t.Errorf("after min lowered to what is bound: stale %v", got)
	}
	s.OnPodGroup(podGroup("g", 3, nil))
	clk.Step(59 * time.Second)
	if got := s.StaleGangs(); len(got) > 0 {
		t.Errorf("a minute has not passed since min was raised: stale %v", got)
	}
	clk.Step(time.Second)
	if got := s.StaleGangs(); len(got) != 1 {
		t.Errorf("stale %v, want the gang", got)
	}
	s.OnPod(terminating(bound(member("g", 0), "n")))
	s.OnPod(terminating(bound(member("g", 1), "n")))
	if got := s.StaleGangs(); len(got) > 0 {
		t.Errorf("its pods are terminating: stale %v", got)
	}
}

// TestStaleGangClock: a replacement that reserves and gives back does not
// restart the clock, a gang whose min is binding is not given back, and a
// member terminating counts as bound until it is gone.
func TestStaleGangClock(t *testing.T) {
	s, clk := twoOfThreeBound()
	p2 := member("g", 2)
	s.OnPod(p2)
	clk.Step(30 * time.Second)
	if st := s.Reserve(p2, "n"); st != nil {
		t.Fatal(st)
	}
	if got := s.StaleGangs(); len(got) > 0 {
		t.Errorf("its min is placed and binding: stale %v", got)
	}
	s.Unreserve(p2)
	clk.Step(30 * time.Second)
	if got := s.StaleGangs(); len(got) != 1 {
		t.Errorf("a minute below min, a try in between: stale %v, want the gang", got)
	}

	// A member terminating holds its node: the gang is not stale while it goes.
	s.OnPodGroup(podGroup("g", 2, nil))
	s.OnPod(terminating(bound(member("g", 1), "n")))
	clk.Step(time.Hour)
	if got := s.StaleGangs(); len(got) > 0 {
		t.Errorf("a member is terminating: stale %v", got)
	}
	s.OnPodDeleted(terminating(bound(member("g", 1), "n")))
	clk.Step(time.Minute)
	if got := s.StaleGangs(); len(got) != 1 {
		t.Errorf("a minute after the member went: stale %v, want the gang", got)
	}
}
