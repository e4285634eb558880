package state

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// TestPreemptorOf: who may preempt, for what, and why not (SPEC §2.4,
// §5.8): a gang's pod makes room for the rest of its min, its other
// members in rank order; elastic pods, PreemptNever pods, incomplete and
// backing-off gangs do not preempt.
func TestPreemptorOf(t *testing.T) {
	never := corev1.PreemptNever
	tests := []struct {
		name string
		// setup records pods in s and returns the pod asked about.
		setup       func(s *State) *corev1.Pod
		wantReason  string
		wantMissing int
		wantPods    []string
	}{
		{"a pod without a gang makes room for itself", func(s *State) *corev1.Pod {
			p := builder.MakePod("ns", "single").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
			p.UID = "single"
			s.OnPod(p)
			return p
		}, "", 1, []string{"single"}},
		{"preemptionPolicy Never", func(s *State) *corev1.Pod {
			p := member("g", 0)
			p.Spec.PreemptionPolicy = &never
			return p
		}, "its preemptionPolicy is Never", 0, nil},
		{"a pod the state has not seen is recorded, as Reserve would", func(s *State) *corev1.Pod {
			p := builder.MakePod("ns", "unseen").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
			p.UID = "unseen"
			return p
		}, "", 1, []string{"unseen"}},
		{"a gang below minMember pods", func(s *State) *corev1.Pod {
			s.OnPodGroup(podGroup("g", 3, nil))
			s.OnPod(member("g", 0))
			s.OnPod(member("g", 1))
			return member("g", 0)
		}, "its gang is not complete", 0, nil},
		{"a gang's whole min, the asking pod first, then by rank", func(s *State) *corev1.Pod {
			s.OnPodGroup(podGroup("g", 3, nil))
			for i := range 4 {
				s.OnPod(member("g", i))
			}
			return member("g", 2)
		}, "", 3, []string{"g-2", "g-0", "g-1", "g-3"}},
		{"the rest of a gang's min", func(s *State) *corev1.Pod {
			s.OnPodGroup(podGroup("g", 3, nil))
			s.OnPod(bound(member("g", 0), "n"))
			s.OnPod(member("g", 1))
			s.OnPod(member("g", 2))
			return member("g", 2)
		}, "", 2, []string{"g-2", "g-1"}},
		{"an elastic pod", func(s *State) *corev1.Pod {
			s.OnPodGroup(podGroup("g", 1, nil))
			s.OnPod(bound(member("g", 0), "n"))
			s.OnPod(member("g", 1))
			return member("g", 1)
		}, "it is an elastic pod: elastic pods never preempt", 0, nil},
		{"a gang backing off", func(s *State) *corev1.Pod {
			s.OnPodGroup(podGroup("g", 2, nil))
			s.OnPod(member("g", 0))
			s.OnPod(member("g", 1))
			s.FailGang("ns/g", "it did not fit")
			return member("g", 0)
		}, "its gang is held or backing off", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			s.OnQueue(builder.MakeQueue("q").Obj())
			s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
			pod := tc.setup(s)
			p, reason, waiting := s.PreemptorOf(pod)
			if waiting {
				t.Errorf("waiting, want not")
			}
			if !strings.Contains(reason, tc.wantReason) || (tc.wantReason == "") != (reason == "") {
				t.Errorf("reason %q, want %q", reason, tc.wantReason)
			}
			if reason != "" {
				return
			}
			var names []string
			for _, m := range p.Pods {
				names = append(names, m.Name)
			}
			if p.Missing != tc.wantMissing || !cmp.Equal(names, tc.wantPods) {
				t.Errorf("missing %d of %v, want %d of %v", p.Missing, names, tc.wantMissing, tc.wantPods)
			}
		})
	}
}

// TestPreemptionUnderWay: once a gang has evicted, no second round starts
// while its victims terminate or its members take the room kept for them
// (SPEC §5.8); the room is kept on the nominated nodes, victims are no
// longer offered as victims, the last victim gone wakes the members, any
// member placed on a kept node uses that room, and room not taken is let go
// claimSettle after the victims went.
func TestPreemptionUnderWay(t *testing.T) {
	s, clk := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 2).Obj())
	s.OnNode(builder.MakeNode("m").GPU(h200, 2).Obj())
	low := []*corev1.Pod{bound(single("low-0"), "n"), bound(single("low-1"), "m"), bound(single("low-2"), "m")}
	for _, p := range low {
		s.OnPod(p)
	}
	s.OnPodGroup(podGroup("g", 2, nil))
	g0, g1, g2 := member("g", 0), member("g", 1), member("g", 2)
	for _, p := range []*corev1.Pod{g0, g1, g2} {
		s.OnPod(p)
	}
	pre, reason, _ := s.PreemptorOf(g0)
	if reason != "" {
		t.Fatalf("g may not preempt: %s", reason)
	}
	s.Preempted(pre, []types.UID{"low-0", "low-1"}, map[*corev1.Pod]string{g0: "n", g1: "m"})
	s.Flush(&fake.Framework{})

	waitingFor := func(want string) {
		t.Helper()
		_, reason, waiting := s.PreemptorOf(g2)
		if !waiting || !strings.Contains(reason, want) {
			t.Errorf("PreemptorOf = %q, waiting %v; want waiting, %q", reason, waiting, want)
		}
	}
	waitingFor("2 pods evicted for it are still terminating")
	if !s.PreemptionUnderWay(g2) {
		t.Error("no preemption under way for a pod of the gang")
	}
	if got := s.ClaimsOn("n"); len(got) != 1 || got[0].Pod != g0.UID || got[0].Key != "gang ns/g" {
		t.Errorf("claims on n: %+v, want g-0's", got)
	}
	var offered []string
	for _, p := range s.PlacedIn("q") {
		offered = append(offered, p.Pod.Name)
	}
	if !cmp.Equal(offered, []string{"low-2"}) {
		t.Errorf("placed pods offered as victims: %v, want only low-2", offered)
	}

	s.OnPodDeleted(low[0])
	fw := &fake.Framework{}
	s.Flush(fw)
	if len(fw.Activated()) != 0 {
		t.Errorf("one victim of two gone woke %v", fw.Activated())
	}
	s.OnPodDeleted(low[1])
	s.Flush(fw)
	if want := []string{"ns/g-0", "ns/g-1"}; !cmp.Equal(fw.Activated(), want) {
		t.Errorf("the last victim gone woke %v, want %v", fw.Activated(), want)
	}
	waitingFor("the room made for it is kept while its members are placed")

	// g-2 takes the room kept on m for g-1: that claim is used, and the
	// members are woken to go on with the gang.
	if st := s.Reserve(g2, "m"); !st.IsSuccess() {
		t.Fatal(st)
	}
	fw = &fake.Framework{}
	s.Flush(fw)
	if !cmp.Equal(fw.Activated(), []string{"ns/g-0", "ns/g-1"}) {
		t.Errorf("g-2 taking g-1's room woke %v, want the members", fw.Activated())
	}
	if got := s.ClaimsOn("m"); len(got) != 0 {
		t.Errorf("claims on m after g-2 took the room: %+v", got)
	}
	if got := s.ClaimsOn("n"); len(got) != 1 {
		t.Errorf("claims on n: %+v, want g-0's still", got)
	}
	waitingFor("kept while its members are placed")

	// g-0 never comes: its room is let go and the gang may preempt again.
	clk.Step(claimSettle + tickEvery)
	s.tick()
	fw = &fake.Framework{}
	s.Flush(fw)
	if s.PreemptionUnderWay(g2) || len(s.ClaimsOn("n")) != 0 {
		t.Errorf("room still kept %v after claimSettle", s.ClaimsOn("n"))
	}
	if !cmp.Equal(fw.Activated(), []string{"ns/g-0", "ns/g-1"}) {
		t.Errorf("letting the room go woke %v, want the members", fw.Activated())
	}
}

// TestPreemptionEndsWhenMembersPlaced: members placed on their kept room
// end the preemption at once.
func TestPreemptionEndsWhenMembersPlaced(t *testing.T) {
	s, _, victim, p := oneVictim(nil)
	if key := s.preemptions.underWay[s.PreemptorKeyOf(p)]; key == nil {
		t.Fatalf("no preemption recorded for %s", s.PreemptorKeyOf(p))
	}
	s.OnPodDeleted(victim)
	if st := s.Reserve(p, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if s.PreemptionUnderWay(p) || len(s.ClaimsOn("n")) != 0 || len(s.preemptions.underWay) != 0 || len(s.preemptions.claimOf) != 0 || len(s.preemptions.victimOf) != 0 {
		t.Errorf("preemption left behind: %v claims %v", s.preemptions.underWay, s.ClaimsOn("n"))
	}
}

// oneVictim is a one-card node n holding the pod low, and the pod high,
// which has evicted low and is nominated on n.
func oneVictim(grace *int64) (s *State, clk *testingclock.FakeClock, victim, high *corev1.Pod) {
	s, clk = newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 1).Obj())
	victim = bound(single("low"), "n")
	victim.Spec.TerminationGracePeriodSeconds = grace
	s.OnPod(victim)
	high = single("high")
	s.OnPod(high)
	pre, _, _ := s.PreemptorOf(high)
	s.Preempted(pre, []types.UID{victim.UID}, map[*corev1.Pod]string{high: "n"})
	return s, clk, victim, high
}

// single is a pod without a gang in queue q asking for one card.
func single(name string) *corev1.Pod {
	p := builder.MakePod("ns", name).Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	p.UID = types.UID(name)
	return p
}

// TestVictimAtPermitFreesItsRoom: a victim that was reserved, not bound,
// is rejected in memory rather than deleted: its Unreserve frees its room
// as a deletion does, and wakes the preemptor.
func TestVictimAtPermitFreesItsRoom(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 1).Obj())
	s.OnPodGroup(podGroup("v", 2, nil))
	v0, v1 := member("v", 0), member("v", 1)
	s.OnPod(v0)
	s.OnPod(v1)
	if st := s.Reserve(v0, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	p := single("high")
	s.OnPod(p)
	pre, _, _ := s.PreemptorOf(p)
	s.Preempted(pre, []types.UID{v0.UID}, map[*corev1.Pod]string{p: "n"})
	s.Flush(&fake.Framework{})
	s.Unreserve(v0)
	fw := &fake.Framework{}
	s.Flush(fw)
	if !cmp.Equal(fw.Activated(), []string{"ns/high"}) {
		t.Errorf("the victim's Unreserve woke %v, want ns/high", fw.Activated())
	}
	if _, reason, waiting := s.PreemptorOf(p); !waiting || strings.Contains(reason, "terminating") {
		t.Errorf("PreemptorOf = %q, waiting %v: want the room kept, no victim left", reason, waiting)
	}
}

// TestVictimGoneOnlyWhenItsNodeIsFree: a victim that is only terminating
// still holds its node, so its preemptor waits (no second round, SPEC
// §5.8) though the victim is no longer charged or offered; it is gone when
// deleted or when it has finished.
func TestVictimGoneOnlyWhenItsNodeIsFree(t *testing.T) {
	tests := []struct {
		name string
		gone func(s *State, victim *corev1.Pod)
	}{
		{"deleted", func(s *State, victim *corev1.Pod) { s.OnPodDeleted(victim) }},
		{"finished", func(s *State, victim *corev1.Pod) {
			done := victim.DeepCopy()
			done.Status.Phase = corev1.PodSucceeded
			s.OnPod(done)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, victim, p := oneVictim(nil)

			terminating := victim.DeepCopy()
			now := metav1.NewTime(t0)
			terminating.DeletionTimestamp = &now
			s.OnPod(terminating)
			if _, reason, waiting := s.PreemptorOf(p); !waiting || !strings.Contains(reason, "1 pod evicted for it is still terminating") {
				t.Errorf("while the victim terminates: PreemptorOf = %q, waiting %v", reason, waiting)
			}
			if placed := s.PlacedIn("q"); len(placed) != 0 {
				t.Errorf("a terminating pod offered as a victim: %v", placed)
			}
			tc.gone(s, terminating)
			if _, reason, waiting := s.PreemptorOf(p); !waiting || strings.Contains(reason, "terminating") {
				t.Errorf("after the victim went: PreemptorOf = %q, waiting %v; want the room kept, no victim left", reason, waiting)
			}
		})
	}
}

// TestUnreservedMemberGetsItsRoomKept: a member that took its kept room
// and gave it back (its gang did not complete at Permit) has it kept again
// while the preemption is under way.
func TestUnreservedMemberGetsItsRoomKept(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 2).Obj())
	victim := bound(single("low"), "n")
	s.OnPod(victim)
	s.OnPodGroup(podGroup("g", 2, nil))
	g0, g1 := member("g", 0), member("g", 1)
	s.OnPod(g0)
	s.OnPod(g1)
	pre, _, _ := s.PreemptorOf(g0)
	s.Preempted(pre, []types.UID{victim.UID}, map[*corev1.Pod]string{g0: "n", g1: "n"})
	if st := s.Reserve(g0, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := s.ClaimsOn("n"); len(got) != 1 || got[0].Pod != g1.UID {
		t.Errorf("claims on n with g-0 reserved: %+v, want g-1's", got)
	}
	s.Unreserve(g0)
	if got := s.ClaimsOn("n"); len(got) != 2 {
		t.Errorf("claims on n after g-0 gave its room back: %+v, want both members'", got)
	}
}

// TestPreemptionDeadline: room is kept for as long as the victims may take
// to terminate, plus claimTTL; then the preemption ends, the members are
// woken and the nominations of those that did not take their room are
// cleared.
func TestPreemptionDeadline(t *testing.T) {
	s, clk, _, p := oneVictim(ptr.To[int64](600))

	clk.Step(claimTTL + tickEvery)
	s.tick()
	if !s.PreemptionUnderWay(p) {
		t.Fatal("room let go before the victim's grace period ended")
	}
	clk.Step(10 * time.Minute)
	s.tick()
	fw := &fake.Framework{Client: kubefake.NewClientset(p)}
	s.Flush(fw)
	if s.PreemptionUnderWay(p) || len(s.ClaimsOn("n")) != 0 || len(s.preemptions.victimOf) != 0 || len(s.preemptions.claimOf) != 0 {
		t.Errorf("preemption still under way after its deadline: %v", s.preemptions.underWay)
	}
	if !cmp.Equal(fw.Activated(), []string{"ns/high"}) || !cmp.Equal(fw.Cleared(), []string{"high"}) {
		t.Errorf("woke %v and cleared the nominations of %v, want ns/high and high", fw.Activated(), fw.Cleared())
	}
}

// TestMemberPlacedElsewhereLetsItsRoomGo: a member placed on a node other
// than the one its room was kept on needs that room no more.
func TestMemberPlacedElsewhereLetsItsRoomGo(t *testing.T) {
	s, _, _, p := oneVictim(nil)
	s.OnNode(builder.MakeNode("m").GPU(h200, 1).Obj())
	if st := s.Reserve(p, "m"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := s.ClaimsOn("n"); len(got) != 0 {
		t.Errorf("room still kept on n for a pod placed on m: %+v", got)
	}
	s.Unreserve(p)
	if got := s.ClaimsOn("n"); len(got) != 1 {
		t.Errorf("claims on n after the pod gave m back: %+v, want its room kept again", got)
	}
}

// gangOn is a state with queue q, nodes of cards H200 cards each, and gang
// g of min minMember with pods members, none placed.
func gangOn(cards int, nodes []string, minMember int32, pods int) (*State, []*corev1.Pod) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	for _, n := range nodes {
		s.OnNode(builder.MakeNode(n).GPU(h200, cards).Obj())
	}
	s.OnPodGroup(podGroup("g", minMember, nil))
	g := make([]*corev1.Pod, pods)
	for i := range g {
		g[i] = member("g", i)
		s.OnPod(g[i])
	}
	return s, g
}

// TestSiblingTakingRoomClearsStaleNomination: a gang's pod that is not one
// of the nominated members takes a member's kept room; that member's
// nomination is cleared (kube-scheduler would count it on the node on top
// of the pod, and the gang's other member would find the node full) and
// the members are woken. A member placed on a sibling's node hands its own
// room to that sibling, and gets it back if it gives the node back.
func TestSiblingTakingRoomClearsStaleNomination(t *testing.T) {
	setup := func() (*State, []*corev1.Pod) { return gangOn(2, []string{"n", "m"}, 2, 3) }
	claimsOf := func(s *State) map[string]types.UID {
		out := map[string]types.UID{}
		for _, node := range []string{"n", "m"} {
			for _, c := range s.ClaimsOn(node) {
				out[string(c.Pod)] = types.UID(node)
			}
		}
		return out
	}

	// thirdOnTheirNode keeps room on n for the first two members, made for
	// queue (their own, q, unless set), and places the third member on n.
	thirdOnTheirNode := func(t *testing.T, queue string) (*State, *fake.Framework) {
		s, g := setup()
		s.OnQueue(builder.MakeQueue("c").Obj())
		pre, _, _ := s.PreemptorOf(g[0])
		if queue != "" {
			pre.Queue = queue
		}
		s.Preempted(pre, nil, map[*corev1.Pod]string{g[0]: "n", g[1]: "n"})
		s.Flush(&fake.Framework{})
		if st := s.Reserve(g[2], "n"); !st.IsSuccess() {
			t.Fatal(st)
		}
		fw := &fake.Framework{Client: kubefake.NewClientset(g[0], g[1])}
		s.Flush(fw)
		return s, fw
	}

	t.Run("a pod without room of its own", func(t *testing.T) {
		s, fw := thirdOnTheirNode(t, "")
		claims := claimsOf(s)
		if len(claims) != 1 || len(fw.Cleared()) != 1 {
			t.Fatalf("claims %v, cleared nominations %v: want one member's room kept and the other's nomination cleared", claims, fw.Cleared())
		}
		if _, kept := claims[fw.Cleared()[0]]; kept {
			t.Errorf("%s's nomination cleared while its room is kept", fw.Cleared()[0])
		}
		if got := strings.Join(fw.Activated(), ","); got != "ns/g-0,ns/g-1" {
			t.Errorf("woke %s, want the members ns/g-0,ns/g-1", got)
		}
	})

	// moveTo relabels pods into queue c, one by one, and tells whether the
	// preemption for the first is still under way after each.
	moveTo := func(s *State, pods ...*corev1.Pod) []bool {
		var under []bool
		for _, p := range pods {
			moved := p.DeepCopy()
			moved.Labels[v1alpha1.QueueLabel] = "c"
			s.OnPod(moved)
			under = append(under, s.PreemptionUnderWay(pods[0]))
		}
		return under
	}

	t.Run("members that all left the queue give up its room", func(t *testing.T) {
		s, g := setup()
		s.OnQueue(builder.MakeQueue("c").Obj())
		pre, _, _ := s.PreemptorOf(g[0])
		s.Preempted(pre, nil, map[*corev1.Pod]string{g[0]: "n", g[1]: "n"})
		s.Flush(&fake.Framework{})
		if got := moveTo(s, g[2], g[0], g[1]); !cmp.Equal(got, []bool{true, true, false}) {
			t.Errorf("under way after each move: %v, want until the last member in q left", got)
		}
		fw := &fake.Framework{Client: kubefake.NewClientset(g[0], g[1])}
		s.Flush(fw)
		if got := claimsOf(s); len(got) != 0 {
			t.Errorf("claims %v once every member left q: want its room given up", got)
		}
		if got := strings.Join(fw.Activated(), ","); got != "ns/g-0,ns/g-1" {
			t.Errorf("woke %q, want the members ns/g-0,ns/g-1", got)
		}
	})

	t.Run("the preemption stands while its victims go", func(t *testing.T) {
		s, g := setup()
		s.OnQueue(builder.MakeQueue("c").Obj())
		victim := bound(single("low"), "m")
		s.OnPod(victim)
		pre, _, _ := s.PreemptorOf(g[0])
		s.Preempted(pre, []types.UID{victim.UID}, map[*corev1.Pod]string{g[0]: "n", g[1]: "n"})
		if got := moveTo(s, g[0], g[1], g[2]); !cmp.Equal(got, []bool{true, true, true}) {
			t.Errorf("under way after each move: %v, want it to stand while its victim goes", got)
		}
		s.OnPodDeleted(victim)
		if s.PreemptionUnderWay(g[0]) || len(claimsOf(s)) != 0 {
			t.Errorf("claims %v once the victim is gone: want the room given up, its members in c", claimsOf(s))
		}
	})

	t.Run("room made for one queue is not taken as another's", func(t *testing.T) {
		s, fw := thirdOnTheirNode(t, "c") // made for c, while the members are in q
		if got := claimsOf(s); len(got) != 2 || len(fw.Cleared()) != 0 {
			t.Errorf("claims %v, cleared nominations %v: want both members' room kept for c, none taken as q's", got, fw.Cleared())
		}
	})

	t.Run("a member placed on its sibling's node", func(t *testing.T) {
		s, g := setup()
		pre, _, _ := s.PreemptorOf(g[0])
		s.Preempted(pre, nil, map[*corev1.Pod]string{g[0]: "n", g[1]: "m"})
		s.Flush(&fake.Framework{})
		if st := s.Reserve(g[0], "m"); !st.IsSuccess() {
			t.Fatal(st)
		}
		fw := &fake.Framework{Client: kubefake.NewClientset(g[0], g[1])}
		s.Flush(fw)
		if got := claimsOf(s); !cmp.Equal(got, map[string]types.UID{"g-1": "n"}) {
			t.Errorf("claims %v, want g-1's room moved to n, where g-0's was", got)
		}
		if !cmp.Equal(fw.Cleared(), []string{"g-1"}) {
			t.Errorf("cleared the nominations of %v, want g-1 (nominated on m, whose room g-0 took)", fw.Cleared())
		}
		s.Unreserve(g[0])
		if got := claimsOf(s); !cmp.Equal(got, map[string]types.UID{"g-1": "n", "g-0": "m"}) {
			t.Errorf("claims after g-0 gave m back: %v, want g-1 on n and g-0 on m", got)
		}
	})
}

// TestHandedRoomSurvivesUnreserveInAnyOrder: g-0 placed on g-1's node hands
// its room to g-1, which then takes it; when the gang gives its places back,
// in either order, each of the three members has its room kept again.
func TestHandedRoomSurvivesUnreserveInAnyOrder(t *testing.T) {
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s, g := gangOn(1, []string{"n", "m", "k"}, 3, 3)
			pre, _, _ := s.PreemptorOf(g[0])
			s.Preempted(pre, nil, map[*corev1.Pod]string{g[0]: "n", g[1]: "m", g[2]: "k"})
			if st := s.Reserve(g[0], "m"); !st.IsSuccess() {
				t.Fatal(st)
			}
			if st := s.Reserve(g[1], "n"); !st.IsSuccess() {
				t.Fatal(st)
			}
			for _, i := range order {
				s.Unreserve(g[i])
			}
			got := map[string]string{}
			for _, n := range []string{"n", "m", "k"} {
				for _, c := range s.ClaimsOn(n) {
					got[string(c.Pod)] = n
				}
			}
			if len(got) != 3 {
				t.Errorf("claims after the gang gave its places back: %v, want room kept for all three members", got)
			}
		})
	}
}

// TestStaleNominationClearedAgain: a nomination that lands after the
// state cleared it (an older patch) is cleared again; one the member got
// anew with room kept for it is not.
func TestStaleNominationClearedAgain(t *testing.T) {
	s, g := gangOn(1, []string{"n", "m"}, 2, 2)
	pre, _, _ := s.PreemptorOf(g[0])
	s.Preempted(pre, nil, map[*corev1.Pod]string{g[0]: "n", g[1]: "m"})
	if st := s.Reserve(g[0], "m"); !st.IsSuccess() {
		t.Fatal(st)
	}
	s.Flush(&fake.Framework{})

	if cleared := nominateLate(s, g[1], "m"); !cmp.Equal(cleared, []string{"g-1"}) {
		t.Errorf("a late nomination of g-1 on m: cleared %v, want g-1", cleared)
	}

	s.Unreserve(g[0])
	pre, _, _ = s.PreemptorOf(g[1])
	s.Preempted(pre, nil, map[*corev1.Pod]string{g[1]: "n", g[0]: "m"})
	if cleared := nominateLate(s, g[1], "n"); len(cleared) != 0 { // where its room now is
		t.Errorf("a nomination with room kept for it was cleared: %v", cleared)
	}
}

// nominateLate delivers pod nominated on node, as an update of kube-scheduler's
// nomination would arrive, and returns the pods whose nomination the state
// then clears.
func nominateLate(s *State, pod *corev1.Pod, node string) []string {
	late := pod.DeepCopy()
	late.Status.NominatedNodeName = node
	s.OnPod(late)
	fw := &fake.Framework{Client: kubefake.NewClientset(late)}
	s.Flush(fw)
	return fw.Cleared()
}

// TestPlacedMemberNominationKept: a member whose nomination was cleared
// and that is then placed may be nominated where it waits at Permit (as
// kube-scheduler does with NominatedNodeNameForExpectation): that is not
// cleared.
func TestPlacedMemberNominationKept(t *testing.T) {
	s, g := gangOn(1, []string{"n", "m"}, 2, 2)
	pre, _, _ := s.PreemptorOf(g[0])
	s.Preempted(pre, nil, map[*corev1.Pod]string{g[0]: "n", g[1]: "m"})
	if st := s.Reserve(g[0], "m"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := s.Reserve(g[1], "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	s.Flush(&fake.Framework{})
	if cleared := nominateLate(s, g[1], "n"); len(cleared) != 0 {
		t.Errorf("the nomination of a member placed on n was cleared: %v", cleared)
	}
}

// TestGracePeriod: a preemption waits for a victim's grace period, never
// past maxGrace, and a huge one does not overflow into the past.
func TestGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		grace *int64
		want  time.Duration
	}{
		{nil, 30 * time.Second},
		{ptrTo[int64](0), 0},
		{ptrTo[int64](600), 10 * time.Minute},
		{ptrTo[int64](-1), 0},
		{ptrTo[int64](9_300_000_000), maxGrace},
		{ptrTo[int64](math.MaxInt64), maxGrace},
	} {
		p := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: tc.grace}}
		if got := gracePeriod(p); got != tc.want {
			t.Errorf("grace %v: %v, want %v", tc.grace, got, tc.want)
		}
	}
}

// TestNewPodGroupDoesNotInheritBackoff: a PodGroup deleted and made again
// under the same name (its workload made again) is a new gang, tried at
// once, not after the backoff the one it replaces earned.
func TestNewPodGroupDoesNotInheritBackoff(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnPodGroup(podGroup("g", 2, nil))
	s.OnPod(member("g", 0))
	s.OnPod(member("g", 1))
	s.FailGang("ns/g", "it did not fit")
	if st, _ := s.GangStatus("ns/g"); st.BackoffUntil.IsZero() {
		t.Fatal("the failed gang does not back off")
	}
	again := podGroup("g", 2, nil)
	s.OnPodGroup(again) // the same PodGroup again: its backoff stays
	if st, _ := s.GangStatus("ns/g"); st.BackoffUntil.IsZero() {
		t.Error("the same PodGroup delivered again lost its backoff")
	}
	s.OnPodGroupGone(again)
	again = again.DeepCopy()
	again.UID = "pg-g-made-again"
	s.OnPodGroup(again)
	if st, _ := s.GangStatus("ns/g"); !st.BackoffUntil.IsZero() || st.LastFailure != "" {
		t.Errorf("a PodGroup made again backs off until %v after %q; want no backoff", st.BackoffUntil, st.LastFailure)
	}
}

// TestPodGroupMadeAgainWakesMembersLeavingPermit: members reserved when
// their PodGroup is deleted, and still on their way back from Permit when
// it is made again, are woken: the gang became admissible while they were
// placed, and no other event tells kube-scheduler to try them again.
func TestPodGroupMadeAgainWakesMembersLeavingPermit(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	pg := podGroup("g", 2, nil)
	s.OnPodGroup(pg)
	g := []*corev1.Pod{member("g", 0), member("g", 1)}
	for _, p := range g {
		s.OnPod(p)
	}
	for _, p := range g {
		if _, st := s.TryStart(p); !st.IsSuccess() {
			t.Fatal(st)
		}
		if st := s.Reserve(p, "n"); !st.IsSuccess() {
			t.Fatal(st)
		}
	}
	s.OnPodGroupGone(pg)
	s.Flush(&fake.Framework{})
	again := pg.DeepCopy()
	again.UID = "pg-g-made-again"
	s.OnPodGroup(again)
	fw := &fake.Framework{}
	s.Flush(fw)
	if got := strings.Join(fw.Activated(), ","); got != "ns/g-0,ns/g-1" {
		t.Errorf("woke %q, want the members leaving Permit ns/g-0,ns/g-1", got)
	}
}

// TestPlacedInCountsAGangsEvictions: each preemption that evicts pods of a
// gang counts once for it, and its pods placed again carry the count, so
// reclaim can spare the gang it took last time (pkg/preemption).
func TestPlacedInCountsAGangsEvictions(t *testing.T) {
	s, _ := gangState(map[string]int32{"g": 2})
	first := []*corev1.Pod{bound(member("g", 0), "n"), bound(member("g", 1), "n")}
	for _, p := range first {
		s.OnPod(p)
	}
	s.Preempted(Preemptor{Key: "gang ns/other"}, []types.UID{first[0].UID, first[1].UID}, nil)
	for _, p := range first {
		s.OnPodDeleted(p)
	}
	again := []*corev1.Pod{bound(member("g", 2), "n"), bound(member("g", 3), "n")}
	for _, p := range again {
		s.OnPod(p)
	}
	// A preemption whose eviction fails does not count.
	s.Preempted(Preemptor{Key: "gang ns/third"}, []types.UID{again[0].UID, again[1].UID}, nil)
	s.EvictionFailed("gang ns/third", again[0].UID)
	views := s.PlacedIn("q")
	if len(views) != 2 {
		t.Fatalf("placed in q: %d pods, want 2", len(views))
	}
	for _, v := range views {
		if v.GangEvicted != 1 {
			t.Errorf("pod %s of a gang evicted once (two pods in one preemption): GangEvicted %d, want 1", v.Pod.Name, v.GangEvicted)
		}
	}
}

// TestInFlight: a preemption under way takes its victims' charges from
// their queue and gives the room kept for its members to theirs, until
// the victims are gone and the members placed, when usage itself says so.
func TestInFlight(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnQueue(builder.MakeQueue("a").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 2).Obj())
	var victims []*corev1.Pod
	for i := range 2 {
		p := builder.MakePod("ns", fmt.Sprintf("a-%d", i)).Label(v1alpha1.QueueLabel, "a").Req("cpu", "1").GPU(1).Obj()
		p.UID = types.UID(p.Name)
		victims = append(victims, bound(p, "n"))
		s.OnPod(victims[i])
	}
	s.OnPodGroup(podGroup("g", 2, nil))
	g0, g1 := member("g", 0), member("g", 1)
	s.OnPod(g0)
	s.OnPod(g1)
	if _, got := s.Usages(); len(got) != 0 {
		t.Fatalf("in flight with no preemption under way: %v", got)
	}
	pre, reason, _ := s.PreemptorOf(g0)
	if reason != "" {
		t.Fatalf("g may not preempt: %s", reason)
	}
	s.Preempted(pre, []types.UID{"a-0", "a-1"}, map[*corev1.Pod]string{g0: "n", g1: "n"})
	s.Flush(&fake.Framework{})

	want := func(step string, leaving, coming int64) {
		t.Helper()
		usage, got := s.Usages()
		if beyond := got["q"].Beyond.Cards[h200]; beyond != max(coming-leaving, 0) {
			t.Errorf("%s: kept beyond the victims' room %d, want %d", step, beyond, max(coming-leaving, 0))
		}
		if usage["a"].Cards[h200].Allocated != leaving {
			t.Errorf("%s: a charged %d H200, want %d: its victims until they are gone", step, usage["a"].Cards[h200].Allocated, leaving)
		}
		if l, c := got["a"].Leaving.Cards[h200], got["q"].Coming.Cards[h200]; l != leaving || c != coming {
			t.Errorf("%s: H200 leaving a %d, coming to q %d; want %d, %d", step, l, c, leaving, coming)
		}
		if cpu := got["a"].Leaving.Resources[corev1.ResourceCPU]; cpu != leaving*1000 {
			t.Errorf("%s: cpu leaving a %d, want %d", step, cpu, leaving*1000)
		}
	}
	want("evicting", 2, 2)
	for _, v := range victims {
		v = v.DeepCopy()
		v.DeletionTimestamp = &metav1.Time{Time: t0}
		s.OnPod(v)
	}
	want("terminating", 2, 2)
	s.OnPodDeleted(victims[0])
	s.Flush(&fake.Framework{})
	want("one victim gone", 1, 2)
	s.OnPodDeleted(victims[1])
	s.Flush(&fake.Framework{})
	usage, got := s.Usages()
	if usage["a"].Cards[h200].Allocated != 0 || got["a"].Leaving.Cards[h200] != 0 || got["q"].Coming.Cards[h200] != 2 || got["q"].Beyond.Cards[h200] != 2 {
		t.Errorf("both victims gone: a charged %d, leaving %d; coming to q %d, beyond the victims' room %d; want 0, 0, 2, 2",
			usage["a"].Cards[h200].Allocated, got["a"].Leaving.Cards[h200], got["q"].Coming.Cards[h200], got["q"].Beyond.Cards[h200])
	}
	if st := s.Reserve(g0, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if _, got := s.Usages(); got["q"].Coming.Cards[h200] != 1 {
		t.Errorf("a member placed: coming to q %d, want 1", got["q"].Coming.Cards[h200])
	}
	if st := s.Reserve(g1, "n"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if usage, got := s.Usages(); len(got) != 0 || usage["q"].Cards[h200].Allocated != 2 {
		t.Errorf("once done: in flight %v, q charged %d; want nothing, 2", got, usage["q"].Cards[h200].Allocated)
	}
}

// TestWaitedFor: a victim is waited for until claimTTL past the end of
// its grace period, at most maxGrace, then no more, whatever keeps it.
func TestWaitedFor(t *testing.T) {
	s, clk := newTestState()
	now := clk.Now()
	deleted := func(at time.Time, grace time.Duration) *corev1.Pod {
		p := single("v")
		p.DeletionTimestamp = &metav1.Time{Time: at.Add(grace)}
		p.DeletionGracePeriodSeconds = ptr.To(int64(grace / time.Second))
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"not being deleted", single("v"), false},
		{"in its grace period", deleted(now.Add(-time.Minute), 2*time.Minute), true},
		{"past its grace period, within claimTTL", deleted(now.Add(-claimTTL+time.Second), 0), true},
		{"claimTTL past its grace period", deleted(now.Add(-claimTTL-30*time.Second), 30*time.Second), false},
		{"kept for a day by a finalizer", deleted(now.Add(-24*time.Hour), 30*time.Second), false},
		{"a grace period of a year, waited for at most maxGrace", deleted(now.Add(-maxGrace-claimTTL), 365*24*time.Hour), false},
		{"a grace period of a year, within maxGrace", deleted(now.Add(-maxGrace), 365*24*time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.WaitedFor(tt.pod); got != tt.want {
				t.Errorf("WaitedFor = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestInFlightRemembersNoReclaim: after a restart the state remembers no
// preemption, but the pods a scheduler evicted and still terminating leave
// their queue all the same, for as long as a preemption waits for them;
// a pod its owner deletes does not.
func TestInFlightRemembersNoReclaim(t *testing.T) {
	s, clk := newTestState()
	s.OnQueue(builder.MakeQueue("a").Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 4).Obj())
	deleting := func(name string, evicted bool) *corev1.Pod {
		p := builder.MakePod("ns", name).Label(v1alpha1.QueueLabel, "a").GPU(1).Obj()
		p.UID = types.UID(name)
		p = bound(p, "n")
		p.DeletionTimestamp = &metav1.Time{Time: clk.Now().Add(30 * time.Second)}
		p.DeletionGracePeriodSeconds = ptr.To[int64](30)
		if evicted {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
				Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler})
		}
		return p
	}
	victim, deleted := deleting("victim", true), deleting("deleted", false)
	s.OnPod(victim)
	s.OnPod(deleted)
	leaving := func() int64 {
		_, f := s.Usages()
		return f["a"].Leaving.Cards[h200]
	}
	if got := leaving(); got != 1 {
		t.Errorf("leaving a: %d H200, want 1, the evicted pod's", got)
	}
	clk.Step(30*time.Second + claimTTL)
	if got := leaving(); got != 0 {
		t.Errorf("leaving a once no preemption waits for it: %d, want 0", got)
	}
	clk.Step(-claimTTL)
	s.OnPodDeleted(victim)
	if got := leaving(); got != 0 {
		t.Errorf("leaving a once the evicted pod is gone: %d, want 0", got)
	}
	if len(s.books.evicted) != 0 {
		t.Errorf("books.evicted keeps %d pods gone", len(s.books.evicted))
	}
}
