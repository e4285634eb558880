package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// rowLabel confines a test's pods to its own nodes.
const rowLabel = "cardinal.dev/test-row"

var workloadCRDs sync.Once

// installWorkloadCRDs installs examples/workload-crds.yaml, the stand-ins
// for the operators' CRDs, once for the package. A scheduler started after
// it reads their kinds from its start.
func installWorkloadCRDs(t *testing.T) {
	t.Helper()
	var err error
	workloadCRDs.Do(func() {
		var objs []*unstructured.Unstructured
		if objs, err = controlplane.ReadManifests(filepath.Join(env.root, "examples", "workload-crds.yaml")); err != nil {
			return
		}
		var a *controlplane.Applier
		if a, err = controlplane.NewApplier(env.cp.Config()); err != nil {
			return
		}
		err = a.Apply(context.Background(), objs, false)
	})
	if err != nil {
		t.Fatalf("installing the workload CRDs: %v", err)
	}
}

func dyn() dynamic.Interface { return dynamic.NewForConfigOrDie(env.cp.Config()) }

// createObject makes obj (apiVersion, kind, name set) in ns and returns it
// as made, UID included.
func createObject(t *testing.T, ns string, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	gvr := gv.WithResource(strings.ToLower(obj.GetKind()) + "s")
	obj.SetNamespace(ns)
	made, err := dyn().Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return made
}

// object is a custom workload of apiVersion and kind, with spec, labels
// (the queue and preemptibility the gang takes) and annotations.
func object(apiVersion, kind, name string, spec map[string]any, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// controlledBy is a controller reference to owner.
func controlledBy(owner metav1.Object, apiVersion, kind string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

func ownerOf(u *unstructured.Unstructured) []metav1.OwnerReference {
	return controlledBy(u, u.GetAPIVersion(), u.GetKind())
}

// gpuTemplate is a pod template of cardinal-scheduler asking for one card,
// on the test's own nodes.
func gpuTemplate(row string, labels map[string]string) corev1.PodTemplateSpec {
	p := builder.MakePod("", "").GPU(1).NodeSelector(rowLabel, row).Obj()
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: p.Spec}
}

// templateMap is a pod template as a custom workload's spec holds it.
func templateMap(t *testing.T, tmpl corev1.PodTemplateSpec) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// podOf is the pod an operator makes from tmpl, controlled by owner.
func podOf(ns, name string, tmpl corev1.PodTemplateSpec, owner []metav1.OwnerReference, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owner, Labels: map[string]string{}}, Spec: *tmpl.Spec.DeepCopy()}
	for k, v := range tmpl.Labels {
		p.Labels[k] = v
	}
	for k, v := range labels {
		p.Labels[k] = v
	}
	return p
}

// rowNode is a node of the row's with gpus cards.
func rowNode(row string, i, gpus int) *corev1.Node {
	return builder.MakeNode(fmt.Sprintf("%s-%d", row, i)).GPU(h200, gpus).Label(rowLabel, row).Obj()
}

// createJob makes a batch/v1 Job of parallelism pods (completions, if not
// 0) from tmpl; kube-controller-manager's Job controller makes its pods.
func createJob(t *testing.T, ns, name string, parallelism, completions int32, tmpl corev1.PodTemplateSpec, labels, annotations map[string]string, owner []metav1.OwnerReference) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations, OwnerReferences: owner},
		Spec:       batchv1.JobSpec{Parallelism: ptr.To(parallelism), Template: tmpl},
	}
	if completions > 0 {
		j.Spec.Completions = ptr.To(completions)
	}
	made, err := env.kube.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s: %v", name, err)
	}
	return made
}

// createStatefulSet makes a StatefulSet of replicas (no controller runs
// for it here: the test makes its pods, as its controller would).
func createStatefulSet(t *testing.T, ns, name string, replicas int32, tmpl corev1.PodTemplateSpec, labels, annotations map[string]string, owner []metav1.OwnerReference) *appsv1.StatefulSet {
	t.Helper()
	tmpl = *tmpl.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["sts"] = name
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations, OwnerReferences: owner},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"sts": name}}, Template: tmpl},
	}
	made, err := env.kube.AppsV1().StatefulSets(ns).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating StatefulSet %s: %v", name, err)
	}
	return made
}

// waitMadePodGroup waits for the PodGroup ns/name, which may not exist yet,
// and returns it once check passes on it.
func waitMadePodGroup(t *testing.T, ns, name string, check func(*schedv1alpha1.PodGroup) error) *schedv1alpha1.PodGroup {
	t.Helper()
	var pg *schedv1alpha1.PodGroup
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		pg = got
		last = check(got)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("PodGroup %s/%s not as wanted: %v", ns, name, last)
	}
	return pg
}

// madeFor checks that a PodGroup is Cardinal's, made for owner (kind
// Kind), with min, and with the queue and preemptibility labels.
func madeFor(kind string, owner metav1.Object, min int32, queue, preemptibility string) func(*schedv1alpha1.PodGroup) error {
	return func(pg *schedv1alpha1.PodGroup) error {
		switch {
		case !strings.HasPrefix(pg.Annotations[v1alpha1.GroupedByAnnotation], kind+"/"+owner.GetName()):
			return fmt.Errorf("grouped-by %q, want %s/%s", pg.Annotations[v1alpha1.GroupedByAnnotation], kind, owner.GetName())
		case len(pg.OwnerReferences) != 1 || pg.OwnerReferences[0].UID != owner.GetUID():
			return fmt.Errorf("owners %v, want %s %s", pg.OwnerReferences, kind, owner.GetName())
		case pg.Spec.MinMember != min:
			return fmt.Errorf("minMember %d, want %d", pg.Spec.MinMember, min)
		case pg.Labels[v1alpha1.QueueLabel] != queue:
			return fmt.Errorf("queue label %q, want %q", pg.Labels[v1alpha1.QueueLabel], queue)
		case pg.Labels[v1alpha1.PreemptibilityLabel] != preemptibility:
			return fmt.Errorf("preemptibility label %q, want %q", pg.Labels[v1alpha1.PreemptibilityLabel], preemptibility)
		}
		return nil
	}
}

// boundIn counts the bound pods of ns.
func boundIn(ns string) (int, error) {
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n, nil
}

// holdBound checks that exactly n pods of ns are bound over the window.
func holdBound(t *testing.T, ns string, n int) {
	t.Helper()
	holdFor(t, holdWindow, func() error {
		got, err := boundIn(ns)
		if err == nil && got != n {
			err = fmt.Errorf("%d pods of %s bound; want exactly %d (a gang is bound whole or not at all)", got, ns, n)
		}
		return err
	})
}

// placements counts the bound pods of ns by their cardinal.dev/placed-as.
func placements(t *testing.T, ns string) map[string]int {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Annotations[v1alpha1.PlacedAsAnnotation]]++
		}
	}
	return out
}
