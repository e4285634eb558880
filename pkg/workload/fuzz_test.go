package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// FuzzClassify: preemptibility is always one of the three values; the
// first source that carries the label decides when its value is valid,
// and an invalid first value falls back to the priority rule with a
// warning (SPEC §5.1).
func FuzzClassify(f *testing.F) {
	f.Add("non-preemptible", "", "", uint8(7), int32(0), int32(100))
	f.Add("", "semi-preemptible", "preemptible", uint8(6), int32(1000), int32(100))
	f.Add("bogus", "", "non-preemptible", uint8(5), int32(99), int32(100))
	f.Add("", "", "", uint8(0), int32(-5), int32(-5))
	f.Fuzz(func(t *testing.T, group, owner, pod string, present uint8, priority, threshold int32) {
		// present's bits say which of the three sources carry the label.
		labels := func(bit uint8, v string) map[string]string {
			if present&bit == 0 {
				return map[string]string{"other": v}
			}
			return map[string]string{v1alpha1.PreemptibilityLabel: v}
		}
		p := &corev1.Pod{Spec: corev1.PodSpec{Priority: &priority}}
		p.Labels = labels(1, pod)
		got, warning := Classify(p, labels(4, group), labels(2, owner), threshold)

		byPrio := Preemptible
		if priority >= threshold {
			byPrio = NonPreemptible
		}
		want, wantWarning := byPrio, false
		for _, s := range []struct {
			bit uint8
			v   string
		}{{4, group}, {2, owner}, {1, pod}} {
			if present&s.bit == 0 {
				continue
			}
			switch Preemptibility(s.v) {
			case Preemptible, NonPreemptible, SemiPreemptible:
				want = Preemptibility(s.v)
			default:
				wantWarning = true
			}
			break
		}
		if got != want || (warning != "") != wantWarning {
			t.Fatalf("group %q owner %q pod %q (present %03b), priority %d below %d: got %q warning %q, want %q warning %v",
				group, owner, pod, present&7, priority, threshold, got, warning, want, wantWarning)
		}
	})
}
