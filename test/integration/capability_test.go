package integration

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/pkg/inspect"
	"cardinal.dev/cardinal/test/builder"
)

// TestCardOnlyQueueWithinCapability: a queue with card quota only, exactly
// at it (4 of 4 NVIDIA-H200), caps nothing else (SPEC §1.1): its status
// says it is within its capability though its pods use cpu, memory and the
// plain nvidia.com/gpu resource; the scheduler serves no
// cardinal_queue_capability for them, so the shipped alert, which joins
// allocated on capability, has nothing to fire on; and `kubectl cardinal
// queues` shows them uncapped.
func TestCardOnlyQueueWithinCapability(t *testing.T) {
	const name = "cards-only"
	createQueue(t, builder.MakeQueue(name).Card(h200, 4, 4).Obj())
	ns := createNamespaceInQueue(t, name, name)
	createNodes(t, gpuNodes("cardsonly", 2, 2)...)
	s := startScheduler(t, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
	pods := cardPods(ns, "p", "", 4)
	for _, p := range pods {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = *resourceQty("128Mi")
	}
	createPods(t, pods...)
	waitBound(t, ns, boundCount(4))

	waitQueueStatus(t, name, "4 of 4 NVIDIA-H200, cpu, memory and nvidia.com/gpu allocated, within its capability", func(q *v1alpha1.Queue) bool {
		c := meta.FindStatusCondition(q.Status.Conditions, "OverCapability")
		return q.Status.AllocatedSummary == "cpu=400m,memory=512Mi,nvidia.com/gpu=4" && queueCards(q)[h200] == 4 &&
			c != nil && c.Status == metav1.ConditionFalse && c.Message == "within its capability"
	})

	samples := controlplane.Samples(scrapeMetrics(t, s))
	for labels, v := range samples["cardinal_queue_capability"] {
		if strings.Contains(labels, `queue="`+name+`"`) {
			t.Errorf("cardinal_queue_capability%s = %v: the queue caps no resource", labels, v)
		}
	}
	if got := samples["cardinal_queue_allocated"][`{queue="`+name+`",resource="cpu"}`]; got != 0.4 {
		t.Errorf("cardinal_queue_allocated for cpu = %v, want 0.4", got)
	}
	if got := samples["cardinal_queue_card_capability"][`{model="NVIDIA-H200",queue="`+name+`"}`]; got != 4 {
		t.Errorf("cardinal_queue_card_capability for NVIDIA-H200 = %v, want 4", got)
	}

	kubeconfig, err := env.cp.WriteKubeconfig("cards-only.kubeconfig", false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(env.root, "bin", "kubectl-cardinal"), "--kubeconfig", kubeconfig, "queues", "-o", "json").Output()
	if err != nil {
		t.Fatalf("queues -o json: %v", err)
	}
	var rows []inspect.QueueRow
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("queues -o json: %v: %s", err, out)
	}
	seen := map[string]string{}
	for _, r := range rows {
		if r.Queue == name {
			seen[r.Resource] = r.Capability
		}
	}
	want := map[string]string{"cpu": "", "memory": "", "nvidia.com/gpu": "", h200: "4"}
	for res, capability := range want {
		if got, ok := seen[res]; !ok || got != capability {
			t.Errorf("queues -o json: %s capability %q (shown: %v), want %q (\"\" is not capped)", res, got, ok, capability)
		}
	}
}
