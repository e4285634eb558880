package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// TestElasticQuotaOf: a queue's ElasticQuota caps its cards by resource,
// a card resource it lists no model of at zero, and leaves cpu, memory
// and pods out of the way in min as in max: CapacityScheduling adds the
// quotas' mins up resource by resource before it lets a quota borrow, and
// a resource left out of min would turn every borrowing pod away.
func TestElasticQuotaOf(t *testing.T) {
	q := trace.Queue{Name: "team-a", Cards: []trace.CardQuota{
		{Name: "NVIDIA-A100", Guarantee: 2, Capability: ptr.To[int32](6)},
		{Name: "NVIDIA-H100", Guarantee: 1},
	}}
	resources := map[string]corev1.ResourceName{"NVIDIA-A100": "nvidia.com/gpu", "NVIDIA-H100": "nvidia.com/gpu", "NVIDIA-A100/mig": "nvidia.com/mig-1g.10gb"}
	got := elasticQuotaOf(q, resources, []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"})
	want := map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
		"metadata": map[string]any{"name": "team-a", "namespace": namespaceOf("team-a")},
		"spec": map[string]any{
			"min": map[string]any{"nvidia.com/gpu": "3", "cpu": "1000000", "memory": "1000Ti", "pods": "1000000"},
			"max": map[string]any{"nvidia.com/gpu": "7", "nvidia.com/mig-1g.10gb": "0", "cpu": "1000000", "memory": "1000Ti", "pods": "1000000"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ElasticQuota (-want, +got):\n%s", diff)
	}
}
