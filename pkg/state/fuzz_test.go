package state

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// FuzzQueueSpec: whatever a Queue's spec says, even what the CRD's rules
// would refuse, the state takes it without panicking, keeps every number
// it shows non-negative, gives the same numbers for the same spec, and
// gives every charge back when the pods go.
func FuzzQueueSpec(f *testing.F) {
	for _, spec := range []string{
		`{"weight":2,"reclaimable":false,"guarantee":{"cpu":"2"},"capability":{"cpu":"8","memory":"1Gi"},"cards":[{"name":"NVIDIA-H200","guarantee":1,"capability":4}]}`,
		`{"cards":[{"name":"NVIDIA-H200","guarantee":3},{"name":"NVIDIA-H200/mig-1g.18gb-mixed","guarantee":7}]}`,
		`{"weight":-1,"cards":[{"name":"NVIDIA-H200","guarantee":5,"capability":2},{"name":"NVIDIA-H200","guarantee":1}]}`,
		`{"guarantee":{"nvidia.com/gpu":"-3","cpu":"1e18"},"cards":[{"name":"A|B","guarantee":2147483647}]}`,
		`{}`,
	} {
		f.Add(spec, `{"NVIDIA-H200":2}`)
	}
	f.Fuzz(func(t *testing.T, specJSON, annotation string) {
		var spec v1alpha1.QueueSpec
		if json.Unmarshal([]byte(specJSON), &spec) != nil {
			return
		}
		q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "q", UID: "q",
			Annotations: map[string]string{v1alpha1.VolcanoCardQuotaAnnotation: annotation}}, Spec: spec}
		s, _ := newTestState()
		s.OnNode(builder.MakeNode("n0").Res(corev1.ResourceCPU, "16").GPU(h200, 8).Obj())
		s.OnNode(builder.MakeNode("n1").Res(corev1.ResourceCPU, "16").Res("nvidia.com/mig-1g.18gb", "7").
			Label("nvidia.com/gpu.product", h200).Obj())
		s.OnQueue(builder.MakeQueue("other").Card(h200, 2, 8).Obj())
		s.OnQueue(q)
		var pods []*corev1.Pod
		for i := range 6 {
			p := builder.MakePod("ns", fmt.Sprintf("p-%d", i)).Label(v1alpha1.QueueLabel, []string{"q", "other"}[i%2]).
				Req(corev1.ResourceCPU, "1").GPU(1).Obj()
			p.UID = types.UID(p.Name)
			if i < 4 {
				p = bound(p, "n0")
			}
			pods = append(pods, p)
			s.OnPod(p)
		}
		first := s.Usage("q")
		check(t, specJSON, first)
		s.OnQueue(q.DeepCopy())
		if again := s.Usage("q"); !cmp.Equal(first, again) {
			t.Fatalf("%s: the same spec twice gave other numbers: %s", specJSON, cmp.Diff(first, again))
		}
		_ = s.QueueStatuses()
		for _, p := range pods {
			s.OnPodDeleted(p)
		}
		after := s.Usage("q")
		check(t, specJSON, after)
		for r, v := range after.Allocated {
			if v != 0 {
				t.Fatalf("%s: %s %d still allocated with every pod gone", specJSON, r, v)
			}
		}
		for m, c := range after.Cards {
			if c.Allocated != 0 {
				t.Fatalf("%s: %d %s cards still allocated with every pod gone", specJSON, c.Allocated, m)
			}
		}
	})
}

// check fails t on a negative number in u.
func check(t *testing.T, spec string, u Usage) {
	t.Helper()
	for what, rs := range map[string]map[corev1.ResourceName]int64{"allocated": u.Allocated, "deserved": u.Deserved, "pending": u.Pending} {
		for r, v := range rs {
			if v < 0 {
				t.Fatalf("%s: %s %s is %d", spec, what, r, v)
			}
		}
	}
	for m, c := range u.Cards {
		if c.Allocated < 0 || c.Deserved < 0 || c.Pending < 0 {
			t.Fatalf("%s: model %s has %+v", spec, m, c)
		}
	}
}
