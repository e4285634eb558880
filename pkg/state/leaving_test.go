package state

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/test/builder"
)

// TestLeaving: a victim being evicted is leaving from its node, and so is
// a placed pod gone, for cacheLag; a pending pod gone never was on a node.
func TestLeaving(t *testing.T) {
	uids := func(ls []Leaving) []string {
		var out []string
		for _, l := range ls {
			out = append(out, string(l.UID)+"@"+l.Node)
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name string
		// act runs on a state where "low" is bound to n and evicted for
		// "high", which waits; "other" is bound to n, "pending" waits.
		act  func(s *State, advance func(time.Duration))
		want []string
	}{
		{"the victim while it terminates", func(*State, func(time.Duration)) {}, []string{"low@n"}},
		{"the victim gone, within the cache's lag", func(s *State, advance func(time.Duration)) {
			s.OnPodDeleted(bound(single("low"), "n"))
			advance(cacheLag)
		}, []string{"low@n"}},
		{"the victim gone longer ago, once another pod goes", func(s *State, advance func(time.Duration)) {
			s.OnPodDeleted(bound(single("low"), "n"))
			advance(cacheLag + time.Second)
			s.OnPodDeleted(bound(single("other"), "n"))
		}, []string{"other@n"}},
		{"a pending pod gone", func(s *State, advance func(time.Duration)) {
			s.OnPodDeleted(single("pending"))
		}, []string{"low@n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newTestState()
			s.OnQueue(builder.MakeQueue("q").Card(h200, 0, 8).Obj())
			s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
			s.OnPod(bound(single("low"), "n"))
			s.OnPod(bound(single("other"), "n"))
			s.OnPod(single("pending"))
			high := single("high")
			s.OnPod(high)
			pre, _, _ := s.PreemptorOf(high)
			s.Preempted(pre, []types.UID{"low"}, nil)
			tc.act(s, clk.Step)
			if got := uids(s.Leaving()); !slices.Equal(got, tc.want) {
				t.Errorf("Leaving() = %v, want %v", got, tc.want)
			}
		})
	}
}
