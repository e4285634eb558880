package gang

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// TestLess: rank is creation time, then name, then UID.
func TestLess(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name, uid string, age int) *corev1.Pod {
		p := builder.MakePod("ns", name).Obj()
		p.UID = types.UID(uid)
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(age) * time.Second))
		return p
	}
	tests := []struct {
		name string
		a, b *corev1.Pod
		want bool
	}{
		{"older first", pod("z", "1", 1), pod("a", "2", 2), true},
		{"younger after", pod("a", "1", 2), pod("z", "2", 1), false},
		{"same age: by name", pod("a-10", "1", 1), pod("a-2", "2", 1), true},
		{"same age and name (recreated): by UID", pod("a", "1", 1), pod("a", "2", 1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Less(tc.a, tc.b); got != tc.want {
				t.Errorf("Less = %v, want %v", got, tc.want)
			}
			if tc.want && Less(tc.b, tc.a) {
				t.Error("Less is not antisymmetric")
			}
		})
	}
}
