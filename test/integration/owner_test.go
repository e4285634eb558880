package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// TestPodWaitsForItsOwner: a pending pod whose controller is a Job the
// scheduler has not seen waits, with an event naming the Job (its
// cardinal.dev/preemptibility label would decide how the pod is placed,
// and a pod placed preemptible stays so: SPEC §3.7, §5.1); and a pod owned
// by another project's kind of the same name (apps.kruise.io) is not made
// to wait for an object Cardinal does not read.
func TestPodWaitsForItsOwner(t *testing.T) {
	createNodes(t, gpuNodes("owner", 1, 4)...)
	startScheduler(t)
	ns := gpuQueue(t, "owner", 4, 4, true)
	waiting := cardPods(ns, "waits", "", 1)[0]
	waiting.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "not-yet",
		UID: "00000000-0000-0000-0000-0000000000a1", Controller: ptr.To(true)}}
	other := cardPods(ns, "kruise", "", 1)[0]
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "web",
		UID: "00000000-0000-0000-0000-0000000000a2", Controller: ptr.To(true)}}
	createPods(t, waiting, other)
	waitBound(t, ns, podsNamed(other.Name))
	waitPodEvent(t, ns, waiting.Name, "its owner Job "+ns+"/not-yet is not seen yet")
	neverBound(t, ns, waiting.Name)
}

// TestReleasedPodLeavesNoCharge: a pod its controller released (its owner
// reference gone, as when its labels stop matching) and that is then
// deleted leaves nothing behind: a later change to that controller, after
// the gang's PodGroup moved to another queue, charges no queue for it.
// Cardinal's books must be the sum of the pods that exist (SPEC §3.7); an
// entry left under the old controller was charged again, making one
// queue's pending demand negative and another's too high.
func TestReleasedPodLeavesNoCharge(t *testing.T) {
	ctx := context.Background()
	s := startScheduler(t, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
	createQueue(t, builder.MakeQueue("rel-a").Capability("cpu", "100000").Obj())
	createQueue(t, builder.MakeQueue("rel-b").Capability("cpu", "100000").Obj())
	ns := createNamespace(t, "released")
	createPodGroupFrom(t, builder.MakePodGroup(ns, "g", 1).Label(v1alpha1.QueueLabel, "rel-a").Obj())

	// p's controller is a suspended CronJob: no controller acts on p, on
	// any API server version, so p stays as the test makes it.
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cj"},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}},
	}
	cj, err := env.kube.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Both pending for good (no node has a thousand cores), in gang g: p
	// controlled by the CronJob, live by nothing.
	owned := builder.MakePod(ns, "p").Label(schedv1alpha1.PodGroupLabel, "g").Req("cpu", "1000").Obj()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}
	createPods(t, owned, builder.MakePod(ns, "live").Label(schedv1alpha1.PodGroupLabel, "g").Req("cpu", "1000").Obj())
	// pending is each queue's pending cpu as the scheduler serves it; an
	// absent series is 0.
	pending := func() (map[string]float64, error) {
		body, err := tryScrape(s)
		if err != nil {
			return nil, err
		}
		samples := controlplane.Samples(body)["cardinal_queue_pending"]
		return map[string]float64{
			"rel-a": samples[`{queue="rel-a",resource="cpu"}`],
			"rel-b": samples[`{queue="rel-b",resource="cpu"}`],
		}, nil
	}
	waitPending := func(what string, want map[string]float64) {
		t.Helper()
		var got map[string]float64
		if err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(context.Context) (bool, error) {
			var err error
			got, err = pending()
			return err == nil && maps.Equal(got, want), nil
		}); err != nil {
			t.Fatalf("%s: pending cpu %v, want %v", what, got, want)
		}
	}
	waitPending("both pods pending in rel-a", map[string]float64{"rel-a": 2000, "rel-b": 0})

	// p released (its owner reference gone, as a controller releases a pod
	// whose labels it no longer selects), then deleted.
	release := []byte(`{"metadata":{"ownerReferences":null}}`)
	if _, err := env.kube.CoreV1().Pods(ns).Patch(ctx, "p", types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deletePod(t, ns, "p")
	waitPending("p deleted", map[string]float64{"rel-a": 1000, "rel-b": 0})

	// The gang moves to rel-b (its live pod with it); then p's former
	// controller changes.
	pg, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(ctx, "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pg.Labels[v1alpha1.QueueLabel] = "rel-b"
	if _, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPending("the gang moved to rel-b", map[string]float64{"rel-a": 0, "rel-b": 1000})
	relabel := []byte(`{"metadata":{"labels":{"` + v1alpha1.PreemptibilityLabel + `":"` + v1alpha1.NonPreemptible + `"}}}`)
	if _, err := env.kube.BatchV1().CronJobs(ns).Patch(ctx, "cj", types.MergePatchType, relabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"rel-a": 0, "rel-b": 1000}
	holdFor(t, holdWindow, func() error {
		got, err := pending()
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("a deleted pod charged again: pending cpu %v, want %v", got, want)
		}
		return nil
	})
}
