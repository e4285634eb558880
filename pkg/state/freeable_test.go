package state

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestFreeableInQueue: admission counts as free what in-queue preemption
// may take for the gang (SPEC §3.4, §5.4), by the same rules: elastic pods
// of any priority unless non-preemptible, whole preemptible gangs and pods
// of lower priority, never a gang's min in part, never non-preemptible
// work, never the gang's own pods, and nothing for a pod that may not
// preempt.
func TestFreeableInQueue(t *testing.T) {
	preemptible := map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.Preemptible}
	nonPreemptible := map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible}
	withPriority := func(p *corev1.Pod, priority int32) *corev1.Pod {
		p.Spec.Priority = ptr.To(priority)
		return p
	}
	single := func(name string, priority int32, labels map[string]string) *corev1.Pod {
		p := builder.MakePod("ns", name).Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
		p.UID = types.UID(p.Name)
		for k, v := range labels {
			p.Labels[k] = v
		}
		return withPriority(p, priority)
	}
	setup := func(enablePreemption bool) *State {
		s, _ := newTestState()
		if enablePreemption {
			s.EnablePreemption()
		}
		s.OnNode(builder.MakeNode("n").GPU(h200, 16).Obj())
		s.OnQueue(builder.MakeQueue("q").Card(h200, 8, 8).Obj())
		s.OnPodGroup(podGroup("low", 2, preemptible))   // 3 placed: 2 min members, 1 elastic, priority 10
		s.OnPodGroup(podGroup("np", 1, nonPreemptible)) // 2 placed: 1 min member, 1 elastic, never taken
		s.OnPodGroup(podGroup("mixed", 2, preemptible)) // priority 10 and 1000: its min goes whole or not at all
		s.OnPodGroup(podGroup("high", 2, preemptible))  // the preemptor
		for _, p := range []*corev1.Pod{
			withPriority(member("low", 0), 10), withPriority(member("low", 1), 10), withPriority(member("low", 2), 10),
			withPriority(member("np", 0), 10), withPriority(member("np", 1), 10),
			withPriority(member("mixed", 0), 10), withPriority(member("mixed", 1), 1000),
			single("single-low", 10, preemptible), single("single-high", 1000, preemptible),
		} {
			s.OnPod(bound(p, "n"))
		}
		return s
	}
	high := withPriority(member("high", 0), 1000)
	never := withPriority(member("high", 0), 1000)
	never.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	tests := []struct {
		name             string
		enablePreemption bool
		pod              *corev1.Pod
		want             int64
		wantNote         string
	}{
		{"priority 1000: low whole, its elastic pod, np's elastic pod not, single-low", true, high, 3 + 1, "preemptible pods and whole gangs of priority below 1000"},
		{"priority 10: elastic pods only", true, withPriority(member("high", 0), 10), 1, "priority below 10"},
		{"preemptionPolicy Never: elastic pods only (SPEC §3.4)", true, never, 1, "a pod of it has preemptionPolicy Never"},
		{"preemption not enabled: elastic pods only (SPEC §3.4)", false, high, 1, "CardinalPreemption is not enabled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(tc.enablePreemption)
			got := s.FreeableInQueue(tc.pod, "q")
			if diff := cmp.Diff(tc.want, got.Cards[h200]); diff != "" {
				t.Errorf("freeable H200 cards (-want, +got):\n%s", diff)
			}
			if !strings.Contains(got.Note, tc.wantNote) {
				t.Errorf("note %q, want it to say %q", got.Note, tc.wantNote)
			}
		})
	}

	t.Run("a gang's lowest member decides for all its members", func(t *testing.T) {
		s := setup(true)
		s.OnPod(withPriority(member("high", 1), 10))
		for _, p := range []*corev1.Pod{high, withPriority(member("high", 1), 10)} {
			if got := s.FreeableInQueue(p, "q").Cards[h200]; got != 1 {
				t.Errorf("%s: freeable H200 cards %d, want 1: the gang counts as priority 10", p.Name, got)
			}
		}
	})

	t.Run("the gang's own pods and pods evicted for another gang are not free", func(t *testing.T) {
		s := setup(true)
		s.OnPod(withPriority(member("high", 1), 1000))
		s.Reserve(withPriority(member("high", 1), 1000), "n") // a member of its own, placed
		s.Preempted(Preemptor{Key: "gang ns/other"}, []types.UID{"single-low"}, nil)
		if got := s.FreeableInQueue(high, "q").Cards[h200]; got != 3 {
			t.Errorf("freeable H200 cards %d, want 3: low's 3, not its own member, not single-low going for another", got)
		}
		s.Preempted(Preemptor{Key: s.PreemptorKeyOf(high)}, []types.UID{"single-low"}, nil)
		if got := s.FreeableInQueue(high, "q").Cards[h200]; got != 4 {
			t.Errorf("freeable H200 cards %d, want 4: single-low now goes for this gang", got)
		}
	})
}
