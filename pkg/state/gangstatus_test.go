package state

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/test/builder"
)

// TestHolds: a gang's reason is that of the first admission check, in the
// profile's order, that holds it; a check that holds drops the holds of
// those that run after it (they are not run meanwhile); only the leader
// notes gangs for the status writers.
func TestHolds(t *testing.T) {
	tests := []struct {
		name    string
		holds   [][2]string // holder, reason, in the order they happen
		leading bool
		want    string
		held    []string
		noted   bool
	}{
		{"one hold", [][2]string{{"CardinalCardQuota", "cards"}}, true, "cards", []string{"CardinalCardQuota"}, true},
		{"queue before cards", [][2]string{{"CardinalCardQuota", "cards"}, {"CardinalQueue", "queue"}}, true, "queue", []string{"CardinalQueue"}, true},
		{"split before all", [][2]string{{"CardinalQueue", "queue"}, {splitHolder, "split"}}, true, "split", []string{splitHolder}, true},
		{"a later check leaves an earlier hold", [][2]string{{"CardinalQueue", "queue"}, {"CardinalCardQuota", "cards"}}, true, "queue", []string{"CardinalCardQuota", "CardinalQueue"}, true},
		{"a standby notes nothing", [][2]string{{"CardinalQueue", "queue"}}, false, "queue", []string{"CardinalQueue"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			s.SetLeading(tc.leading)
			s.OnPodGroup(podGroup("g", 2, nil))
			k := gang.Key("ns/g")
			for _, h := range tc.holds {
				s.Hold(member("g", 0), k, QuotaAdmission{Holder: h[0]}, builder.Because(h[1]))
			}
			g, _ := s.GangStatus(k)
			if got := g.HeldBy(); got == nil || got.String() != tc.want {
				t.Errorf("HeldBy %v, want %q", got, tc.want)
			}
			var held []string
			for _, h := range holdOrder {
				if _, ok := g.Held[h]; ok {
					held = append(held, h)
				}
			}
			if diff := cmp.Diff(slices.Sorted(slices.Values(tc.held)), slices.Sorted(slices.Values(held))); diff != "" {
				t.Errorf("holders (-want, +got):\n%s", diff)
			}
			if noted := len(s.TakeGangNotes()) > 0; noted != tc.noted {
				t.Errorf("noted %v, want %v", noted, tc.noted)
			}
		})
	}
}

// TestMinBound: a gang counts as waiting until its min is bound, again
// once it loses every placed pod, and a PodGroup created anew under the
// same name waits anew.
func TestMinBound(t *testing.T) {
	s, clk := newTestState()
	s.SetLeading(true)
	s.OnNode(builder.MakeNode("n").GPU(h200, 4).Obj())
	pg := podGroup("g", 2, nil)
	s.OnPodGroup(pg)
	k := gang.Key("ns/g")
	a, b := member("g", 0), member("g", 1)
	s.OnPod(a)
	s.OnPod(b)
	waiting := func() bool { g, _ := s.GangStatus(k); return g.Waiting() }
	if !waiting() {
		t.Fatal("a gang with nothing placed is not waiting")
	}
	s.OnPod(bound(a, "n"))
	s.OnPod(bound(b, "n"))
	if waiting() {
		t.Fatal("a gang with its min bound is waiting")
	}
	s.OnPodDeleted(bound(b, "n"))
	if waiting() {
		t.Error("a gang that lost one pod of its min is waiting again; it had its min")
	}
	s.OnPodGroupGone(pg)
	again := podGroup("g", 2, nil)
	again.UID = types.UID("pg-g-again")
	s.OnPodGroup(again)
	if g, _ := s.GangStatus(k); g.MinBound {
		t.Error("a PodGroup created anew counts as bound before its min was seen bound")
	}
	clk.Step(time.Hour)
	s.OnPodDeleted(bound(a, "n"))
	s.OnPod(b)
	if g, _ := s.GangStatus(k); !g.Waiting() || !g.WaitingSince.Equal(t0) {
		t.Errorf("a PodGroup created anew that never had its min: waiting %v since %v, want since its creation %v", g.Waiting(), g.WaitingSince, t0)
	}
	s.OnPod(a)
	s.OnPod(bound(a, "n"))
	s.OnPod(bound(b, "n"))
	clk.Step(time.Hour)
	s.OnPodDeleted(bound(a, "n"))
	s.OnPodDeleted(bound(b, "n"))
	s.OnPod(member("g", 2))
	if g, _ := s.GangStatus(k); !g.Waiting() || !g.WaitingSince.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("a gang that lost every placed pod: waiting %v since %v, want since it lost them (%v)", g.Waiting(), g.WaitingSince, t0.Add(2*time.Hour))
	}
}
