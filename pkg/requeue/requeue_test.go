package requeue

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// TestOfReadsTypedAndUnstructured: the same change reads the same whether
// it comes typed (Cardinal's informers) or unstructured (kube-scheduler's
// dynamic informers, which feed the hints).
func TestOfReadsTypedAndUnstructured(t *testing.T) {
	typed := func(gen int64, labels, annotations map[string]string) *schedv1alpha1.PodGroup {
		return &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Generation: gen, Labels: labels, Annotations: annotations}}
	}
	unstr := func(gen int64, labels, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName("a")
		u.SetGeneration(gen)
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	req := map[string]string{"cardinal.dev/card-request": `{"NVIDIA-H200":2}`}
	status := map[string]string{"cardinal.dev/scheduled": "1"}
	tests := []struct {
		name            string
		old, new        [2]any
		wantAdmission   bool
		wantQueueChange bool
	}{
		{"added", [2]any{nil, nil}, [2]any{typed(1, nil, nil), unstr(1, nil, nil)}, true, true},
		{"spec changed", [2]any{typed(1, nil, nil), unstr(1, nil, nil)}, [2]any{typed(2, nil, nil), unstr(2, nil, nil)}, true, true},
		{"label changed", [2]any{typed(1, nil, nil), unstr(1, nil, nil)}, [2]any{typed(1, map[string]string{"x": "y"}, nil), unstr(1, map[string]string{"x": "y"}, nil)}, true, false},
		{"card request set", [2]any{typed(1, nil, nil), unstr(1, nil, nil)}, [2]any{typed(1, nil, req), unstr(1, nil, req)}, true, false},
		{"Cardinal's own annotation", [2]any{typed(1, nil, nil), unstr(1, nil, nil)}, [2]any{typed(1, nil, status), unstr(1, nil, status)}, false, false},
	}
	for _, tc := range tests {
		for i, form := range []string{"typed", "unstructured"} {
			t.Run(tc.name+"/"+form, func(t *testing.T) {
				c, err := Of(tc.old[i], tc.new[i])
				if err != nil {
					t.Fatal(err)
				}
				if c.Gang() != "ns/a" {
					t.Errorf("gang %q, want ns/a", c.Gang())
				}
				if got := c.PodGroupAdmission(); got != tc.wantAdmission {
					t.Errorf("PodGroupAdmission = %v, want %v", got, tc.wantAdmission)
				}
				if got := c.QueueQuota(); got != tc.wantQueueChange {
					t.Errorf("QueueQuota = %v, want %v", got, tc.wantQueueChange)
				}
			})
		}
	}
	if _, err := Of(nil, "not an object"); err == nil {
		t.Error("a value without object metadata is read without error")
	}
}
