package eventhandler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestFor(t *testing.T) {
	var got []string
	h := For(func(p *corev1.Pod) bool { return p.Name != "skip" },
		func(p *corev1.Pod) { got = append(got, "upsert "+p.Name) },
		func(p *corev1.Pod) { got = append(got, "remove "+p.Name) })
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	h.OnAdd(pod("a"), false)
	h.OnUpdate(pod("a"), pod("b"))
	h.OnAdd(pod("skip"), false)
	h.OnAdd(&corev1.Node{}, false)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "c", Obj: pod("c")})
	want := []string{"upsert a", "upsert b", "remove c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want, +got):\n%s", diff)
	}
}
