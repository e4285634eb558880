package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// patchLabels merge-patches labels onto an object of kind (pods, namespaces).
func patchLabels(t *testing.T, ns, kind, name string, labels map[string]string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	ctx := context.Background()
	var err error
	switch kind {
	case "pods":
		_, err = env.kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	case "namespaces":
		_, err = env.kube.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	case "podgroups":
		_, err = podGroups().SchedulingV1alpha1().PodGroups(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	default:
		t.Fatalf("patchLabels: unknown kind %s", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// queueAllocated is a queue's status.cards allocated of model.
func queueAllocated(t *testing.T, name, model string) int32 {
	t.Helper()
	q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return queueCards(q)[model]
}

// TestQueueNamespaceSelector: a pod whose namespace a queue's
// namespaceSelector does not match stays Pending with an event naming the
// queue, the namespace and the fix, and is charged nothing there, even
// with room to spare; once the namespace is labelled to match, it runs.
// A namespace the selector matches uses the queue as before (SPEC §1.1).
func TestQueueNamespaceSelector(t *testing.T) {
	createNodes(t, gpuNodes("nsel", 1, 4)...)
	startScheduler(t)
	q := builder.MakeQueue("nsel-b").Card(h200, 4, 4).Obj()
	q.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
	createQueue(t, q)
	own := createNamespace(t, "nsel-own")
	patchLabels(t, "", "namespaces", own, map[string]string{"team": "b"})
	other := createNamespace(t, "nsel-other")

	createPods(t, labelled(v1alpha1.QueueLabel, "nsel-b", cardPods(own, "ok", "", 1)...)...)
	createPods(t, labelled(v1alpha1.QueueLabel, "nsel-b", cardPods(other, "intruder", "", 1)...)...)
	waitBound(t, own, podsNamed("ok-0"))
	waitPodEvent(t, other, "intruder-0", "namespace nsel-other may not use queue nsel-b")
	waitPodEvent(t, other, "intruder-0", "label namespace nsel-other to match it")
	neverBound(t, other, "intruder-0")
	waitQueueStatus(t, "nsel-b", "1 card allocated and nothing pending from the intruder", func(q *v1alpha1.Queue) bool {
		return queueCards(q)[h200] == 1
	})

	kubeconfig, err := env.cp.WriteKubeconfig("nsel.kubeconfig", false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(env.root, "bin", "kubectl-cardinal"), "--kubeconfig", kubeconfig, "queues", "-o", "wide").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "team=b") {
		t.Errorf("kubectl cardinal queues -o wide does not show the queue's namespaceSelector team=b (%v):\n%s", err, out)
	}

	patchLabels(t, "", "namespaces", other, map[string]string{"team": "b"})
	waitBound(t, other, podsNamed("intruder-0"))
}

// TestQueueRelabelDoesNotMoveRunningPods: a running pod relabelled to
// another queue stays charged to the queue it was placed in, with an
// event, so the other queue keeps its whole capability; and the books are
// the same after the scheduler restarts (SPEC §3.7).
func TestQueueRelabelDoesNotMoveRunningPods(t *testing.T) {
	createNodes(t, gpuNodes("relq", 1, 4)...)
	s := startScheduler(t)
	qa := gpuQueue(t, "relq-a", 1, 1, true)
	qb := gpuQueue(t, "relq-b", 1, 1, true)
	createPods(t, cardPods(qa, "a", "", 1)...)
	waitBound(t, qa, podsNamed("a-0"))
	patchLabels(t, qa, "pods", "a-0", map[string]string{v1alpha1.QueueLabel: qb})
	waitPodEvent(t, qa, "a-0", "stays charged to it until it is gone")

	s.Stop() // the books must be rebuilt the same
	startScheduler(t)
	createPods(t, cardPods(qb, "b", "", 1)...)
	waitBound(t, qb, podsNamed("b-0"))
	waitQueueStatus(t, qa, "a-0 still charged to relq-a", func(q *v1alpha1.Queue) bool { return queueCards(q)[h200] == 1 })
	waitQueueStatus(t, qb, "only b-0 charged to relq-b", func(q *v1alpha1.Queue) bool { return queueCards(q)[h200] == 1 })
	createPods(t, cardPods(qa, "a2", "", 1)...)
	neverBound(t, qa, "a2-0") // relq-a is still full
}

// TestRelabelledNonPreemptibleStaysReclaimable: pods borrowed beyond their
// queue's guarantee and then relabelled non-preemptible (on the pod, or on
// the PodGroup, whose minMember is raised too) stay reclaimable, with a
// warning event: the queue they borrowed from reclaims its guarantee
// (SPEC §3.5, §3.7).
func TestRelabelledNonPreemptibleStaysReclaimable(t *testing.T) {
	for _, via := range []string{"pod", "podgroup"} {
		t.Run(via, func(t *testing.T) {
			ensurePriorityClasses(t)
			createNodes(t, gpuNodes("relnp-"+via, 1, 4)...)
			startScheduler(t)
			qa := gpuQueue(t, "relnp-a-"+via, 0, 4, true)
			// relnp-b deserves all 4 cards, as cards and as nvidia.com/gpu:
			// the whole gang may be reclaimed.
			b := builder.MakeQueue("relnp-b-"+via).Card(h200, 4, 4).Obj()
			b.Spec.Guarantee = corev1.ResourceList{builder.GPUResource: resource.MustParse("4")}
			createQueue(t, b)
			qb := createNamespaceInQueue(t, b.Name, b.Name)
			pods := gangPods(qa, "g", 4, 1)
			createPodGroup(t, qa, "g", 1)
			createPods(t, pods...)
			waitBound(t, qa, gangsBound(map[string]int{"g": 4}))
			switch via {
			case "pod":
				for _, p := range pods {
					patchLabels(t, qa, "pods", p.Name, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible})
				}
			case "podgroup":
				patchLabels(t, qa, "podgroups", "g", map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible})
				pg, err := podGroups().SchedulingV1alpha1().PodGroups(qa).Get(context.Background(), "g", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				pg.Spec.MinMember = 4
				if _, err := podGroups().SchedulingV1alpha1().PodGroups(qa).Update(context.Background(), pg, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			waitPodEvent(t, qa, pods[3].Name, "stays preemptible (reclaimable) until it is gone")
			createPods(t, cardPods(qb, "b", "", 2)...)
			waitBound(t, qb, podsNamed("b-0", "b-1"))
		})
	}
}

// TestSidecarCardsCharged: a pod whose restartable init container (a
// sidecar) and main container each ask for a card is charged two, as
// Kubernetes counts its request: a second such pod does not fit a quota of
// 2 (SPEC §4.1).
func TestSidecarCardsCharged(t *testing.T) {
	createNodes(t, gpuNodes("sidecar", 1, 8)...)
	startScheduler(t)
	ns := gpuQueue(t, "sidecar", 2, 2, true)
	withSidecar := func(name string) *corev1.Pod {
		p := builder.MakePod(ns, name).GPU(1).Obj()
		side := *p.Spec.Containers[0].DeepCopy()
		side.Name, side.RestartPolicy = "sidecar", ptr.To(corev1.ContainerRestartPolicyAlways)
		p.Spec.InitContainers = []corev1.Container{side}
		return p
	}
	createPods(t, withSidecar("s-0"))
	waitBound(t, ns, podsNamed("s-0"))
	waitQueueCards(t, ns, map[string]int32{h200: 2})
	createPods(t, withSidecar("s-1"))
	waitPodEvent(t, ns, "s-1", "insufficient NVIDIA-H200 quota: requested 2")
	neverBound(t, ns, "s-1")
}

// refuseDeletes makes kube-apiserver refuse to delete the pods of ns that
// carry the label refuseDeleteLabel, as a flaky webhook or a lost request
// would make an eviction fail, until the test ends.
func refuseDeletes(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-delete-" + ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!has(oldObject.metadata.labels) || !('%s' in oldObject.metadata.labels)", refuseDeleteLabel),
				Message:    "this pod may not be deleted now",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	ar := env.kube.AdmissionregistrationV1()
	if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The namespace's own cleanup deletes its pods next: none may
		// still be refused, whenever kube-apiserver drops the policy.
		if pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: refuseDeleteLabel}); err == nil {
			for _, p := range pods.Items {
				removeLabel(t, ns, p.Name, refuseDeleteLabel)
			}
		}
		_ = ar.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = ar.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
	// The policy takes effect once kube-apiserver has read it: until a
	// probe pod is refused.
	probe := builder.MakePod(ns, "refuse-probe").Label(refuseDeleteLabel, "true").Obj()
	probe.Spec.SchedulerName = "nobody"
	err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if _, err := env.kube.CoreV1().Pods(ns).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		// Refused is the policy's answer; any other error (a timeout on a
		// loaded apiserver) says nothing of it, and the delete may have
		// gone through.
		err := env.kube.CoreV1().Pods(ns).Delete(ctx, probe.Name, metav1.DeleteOptions{})
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})
	if err != nil {
		t.Fatalf("the policy refusing deletes in %s never took effect", ns)
	}
	// The probe goes; CI once found it gone already after a refused
	// delete, which is not what this test is about.
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{refuseDeleteLabel: nil}}})
	if _, err := env.kube.CoreV1().Pods(ns).Patch(ctx, probe.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := env.kube.CoreV1().Pods(ns).Delete(ctx, probe.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

const refuseDeleteLabel = "test.cardinal.dev/refuse-delete"

// removeLabel removes a label from a pod.
func removeLabel(t *testing.T, ns, pod, key string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: nil}}})
	if _, err := env.kube.CoreV1().Pods(ns).Patch(context.Background(), pod, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFailedEvictionRetried: an eviction whose DELETE kube-apiserver
// refuses is tried again with backoff, and the victim is not counted as
// gone meanwhile; once deletes go through, the preemptor runs within a
// minute, not after the five minutes room is kept for it (SPEC §5.8).
func TestFailedEvictionRetried(t *testing.T) {
	ensurePriorityClasses(t)
	createNodes(t, gpuNodes("evretry", 1, 2)...)
	startScheduler(t)
	ns := gpuQueue(t, "evretry", 2, 2, true)
	refuseDeletes(t, ns)
	createPods(t, labelled(refuseDeleteLabel, "true", prioritized(lowPriority, cardPods(ns, "low", "", 2)...)...)...)
	waitBound(t, ns, podsNamed("low-0", "low-1"))
	createPods(t, prioritized(highPriority, cardPods(ns, "high", "", 1)...)...)
	// The victim is marked a disruption target, and its delete refused.
	var victim string
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
					victim = p.Name
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal("no pod was marked a disruption target")
	}
	neverBound(t, ns, "high-0") // the victim still runs: its room is not free
	removeLabel(t, ns, victim, refuseDeleteLabel)
	waitBound(t, ns, podsNamed("high-0"))
}
