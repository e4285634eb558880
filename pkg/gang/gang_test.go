package gang

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/test/builder"
)

func TestOf(t *testing.T) {
	if k, ok := Of(builder.MakePod("ns", "p").Label("scheduling.x-k8s.io/pod-group", "train").Obj()); !ok || k != "ns/train" {
		t.Errorf("Of = %q, %v; want ns/train, true", k, ok)
	}
	if _, ok := Of(builder.MakePod("ns", "p").Obj()); ok {
		t.Error("a pod without a PodGroup label is a gang of one, with no key")
	}
}

func TestSplitElastic(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name string, age int) *corev1.Pod {
		p := builder.MakePod("ns", name).Obj()
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(age) * time.Second))
		return p
	}
	a, b, c, d := pod("a", 3), pod("b", 1), pod("c", 2), pod("d", 2)
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	tests := []struct {
		name             string
		min              int32
		placed           []*corev1.Pod
		wantMin, wantEla []string
	}{
		{"oldest are min, ties by name", 2, []*corev1.Pod{a, b, c, d}, []string{"b", "c"}, []string{"d", "a"}},
		{"below min: nothing elastic", 5, []*corev1.Pod{a, b}, []string{"b", "a"}, nil},
		{"exactly min", 2, []*corev1.Pod{d, c}, []string{"c", "d"}, nil},
		{"min 0: all elastic", 0, []*corev1.Pod{a}, nil, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotMin, gotEla := SplitElastic(tc.min, tc.placed)
			if diff := cmp.Diff(tc.wantMin, names(gotMin)); diff != "" {
				t.Errorf("min members (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEla, names(gotEla)); diff != "" {
				t.Errorf("elastic (-want, +got):\n%s", diff)
			}
		})
	}
}
