package state

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestRoomMadeSkipsGangBeingPlaced: a gang whose victims are gone and
// whose room is kept for its whole missing min is tried while another gang
// is being placed, since it takes only its own room; one whose victims
// still terminate, or whose room covers part of its min, waits its turn.
func TestRoomMadeSkipsGangBeingPlaced(t *testing.T) {
	tests := []struct {
		name string
		// nominate are the members of b room is kept for; gone, whether
		// b's victim is gone.
		nominate int
		gone     bool
		want     bool
	}{
		{"victim gone, room for the whole min", 2, true, true},
		{"victim still terminating", 2, false, false},
		{"room for part of the min", 1, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := gangState(map[string]int32{"a": 2, "b": 2})
			victim := bound(single("low"), "n")
			s.OnPod(victim)
			a0, a1, b0, b1 := member("a", 0), member("a", 1), member("b", 0), member("b", 1)
			for _, p := range []*corev1.Pod{a0, a1, b0, b1} {
				s.OnPod(p)
			}
			if _, st := s.TryStart(a0); !st.IsSuccess() {
				t.Fatalf("a-0 not let through: %v", st)
			}
			if st := s.Reserve(a0, "n"); !st.IsSuccess() {
				t.Fatalf("a-0 not reserved: %v", st)
			}
			pre, _, _ := s.PreemptorOf(b0)
			nominated := map[*corev1.Pod]string{}
			for _, p := range []*corev1.Pod{b0, b1}[:tc.nominate] {
				nominated[p] = "n"
			}
			s.Preempted(pre, []types.UID{victim.UID}, nominated)
			if tc.gone {
				s.OnPodDeleted(victim)
			}
			_, st := s.TryStart(b0)
			if got := st.IsSuccess(); got != tc.want {
				t.Errorf("b-0 tried while a is being placed: %v (%v), want %v", got, st, tc.want)
			}
		})
	}
}
