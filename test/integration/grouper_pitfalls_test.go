package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/inspect"
	"cardinal.dev/cardinal/test/builder"
)

// noPodGroup checks that ns has no PodGroup named name over the window.
func noPodGroup(t *testing.T, ns, name string) {
	t.Helper()
	holdFor(t, holdWindow, func() error {
		_, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Errorf("PodGroup %s/%s was made; it must not be", ns, name)
		case apierrors.IsNotFound(err):
			return nil
		}
		return err
	})
}

// labelledPods counts the pods of ns by their scheduling.x-k8s.io/pod-group label.
func labelledPods(t *testing.T, ns string) map[string]int {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		out[p.Labels[schedv1alpha1.PodGroupLabel]]++
	}
	return out
}

// waitWorkloadEvent waits for a warning event with reason on the object of
// kind and name whose note contains want.
func waitWorkloadEvent(t *testing.T, ns, kind, name, reason, want string) {
	t.Helper()
	waitEvent(t, ns, fmt.Sprintf("%s event on %s %s saying %q", reason, kind, name, want), func(e eventsv1.Event) bool {
		return e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, want)
	})
}

// TestGroupingPitfalls: what users of Cardinal's peers hit when workloads
// became gangs by themselves.
func TestGroupingPitfalls(t *testing.T) {
	installWorkloadCRDs(t)
	startScheduler(t)
	ann := func(n string) map[string]string { return map[string]string{v1alpha1.MinMemberAnnotation: n} }

	t.Run("a Job is a gang only when annotated (KAI #2098)", func(t *testing.T) {
		ns := createGPUNamespace(t, "pitfall-plain-job")
		createNodes(t, rowNode(ns, 0, 2))
		createJob(t, ns, "plain", 3, 0, gpuTemplate(ns, nil), nil, nil, nil)
		// Two of three fit: they are pods of their own, placed one by one.
		waitBound(t, ns, boundCount(2))
		noPodGroup(t, ns, "plain")
		if got := labelledPods(t, ns); got[""] != 3 {
			t.Errorf("pods by PodGroup label %v, want all 3 unlabelled", got)
		}
	})

	t.Run("a JobSet's last pods do not wait for peers that will not come (KAI #1347)", func(t *testing.T) {
		ns := createGPUNamespace(t, "pitfall-jobset")
		createNodes(t, rowNode(ns, 0, 3))
		tmpl := gpuTemplate(ns, nil)
		// 3 completions, 2 at a time: the second wave is one pod.
		js := createObject(t, ns, object("jobset.x-k8s.io/v1alpha2", "JobSet", "part", map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "w", "replicas": int64(1), "template": map[string]any{"spec": map[string]any{
				"parallelism": int64(2), "completions": int64(3), "template": templateMap(t, tmpl)}},
		}}}, nil, nil))
		createJob(t, ns, "part-w-0", 2, 3, tmpl, nil, nil, ownerOf(js))
		waitMadePodGroup(t, ns, "part", madeFor("JobSet", js, 2, "", ""))
		waitBound(t, ns, boundCount(2))
		succeedBound(t, ns)
		waitMadePodGroup(t, ns, "part", madeFor("JobSet", js, 1, "", ""))
		waitBound(t, ns, boundCount(3))
	})

	t.Run("pods grouped by hand are left alone (Volcano #4784)", func(t *testing.T) {
		ns := createGPUNamespace(t, "pitfall-by-hand")
		createNodes(t, rowNode(ns, 0, 2))
		createPodGroup(t, ns, "mine", 3)
		createJob(t, ns, "handmade", 3, 0, gpuTemplate(ns, map[string]string{schedv1alpha1.PodGroupLabel: "mine"}), nil, ann("2"), nil)
		noPodGroup(t, ns, "handmade")
		holdBound(t, ns, 0) // the user's min is 3
		createNodes(t, rowNode(ns, 1, 1))
		waitBound(t, ns, gangsBound(map[string]int{"mine": 3}))
	})
}

// succeedBound marks the bound pods of ns Succeeded, as their kubelet
// would when they end.
func succeedBound(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
		if _, err := env.kube.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupedBeforeScheduled: a grouped workload's pods that exist before
// the scheduler starts (or leads) are not scheduled one by one before their
// PodGroup exists (scheduler-plugins #358): every pod is bound labelled
// into its gang, and the gang binds whole. A pod is only ever labelled
// while it waits, so a bound pod that carries the label was labelled, and
// its PodGroup made, before it was bound.
func TestGroupedBeforeScheduled(t *testing.T) {
	ns := createGPUNamespace(t, "grouped-first")
	createNodes(t, rowNode(ns, 0, 4))
	createJob(t, ns, "early", 3, 0, gpuTemplate(ns, nil), nil, map[string]string{v1alpha1.MinMemberAnnotation: "3"}, nil)
	waitFor(t, "the Job's 3 pods", func() bool {
		pods, err := env.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(pods.Items) == 3
	})
	startScheduler(t)
	waitBound(t, ns, gangsBound(map[string]int{"early": 3}))
}

// TestGroupingBadInput: each bad input of SPEC §7 gets a warning event and
// the next rule, and nothing crashes.
func TestGroupingBadInput(t *testing.T) {
	startScheduler(t)
	ann := func(n string) map[string]string { return map[string]string{v1alpha1.MinMemberAnnotation: n} }

	t.Run("InvalidMinMember", func(t *testing.T) {
		ns := createGPUNamespace(t, "bad-min")
		createNodes(t, rowNode(ns, 0, 2))
		createJob(t, ns, "bad", 2, 0, gpuTemplate(ns, nil), nil, ann("three"), nil)
		waitWorkloadEvent(t, ns, "Job", "bad", "InvalidMinMember", `cardinal.dev/min-member="three", which is not a positive integer`)
		waitBound(t, ns, boundCount(2))
		noPodGroup(t, ns, "bad")
	})

	t.Run("MinMemberAboveSize", func(t *testing.T) {
		ns := createGPUNamespace(t, "big-min")
		createNodes(t, rowNode(ns, 0, 2))
		job := createJob(t, ns, "big", 2, 0, gpuTemplate(ns, nil), nil, ann("5"), nil)
		waitWorkloadEvent(t, ns, "Job", "big", "MinMemberAboveSize", "above the 2 pods it runs: its gang's min is 2")
		waitMadePodGroup(t, ns, "big", madeFor("Job", job, 2, "", ""))
		waitBound(t, ns, gangsBound(map[string]int{"big": 2}))
	})

	t.Run("PodGroupNameConflict", func(t *testing.T) {
		ns := createGPUNamespace(t, "clash")
		createNodes(t, rowNode(ns, 0, 2))
		createPodGroup(t, ns, "clash", 5)
		createJob(t, ns, "clash", 2, 0, gpuTemplate(ns, nil), nil, ann("2"), nil)
		waitWorkloadEvent(t, ns, "Job", "clash", "PodGroupNameConflict", "PodGroup clash exists and was not made by Cardinal")
		waitBound(t, ns, boundCount(2))
		pg, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(context.Background(), "clash", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Spec.MinMember != 5 || pg.Annotations[v1alpha1.GroupedByAnnotation] != "" {
			t.Errorf("the user's PodGroup was changed: minMember %d, annotations %v", pg.Spec.MinMember, pg.Annotations)
		}
		if got := labelledPods(t, ns); got[""] != 2 {
			t.Errorf("pods by PodGroup label %v, want both unlabelled (gangs of one)", got)
		}
	})

	t.Run("a workload made again under its name gets its own PodGroup", func(t *testing.T) {
		ns := createGPUNamespace(t, "again")
		createNodes(t, rowNode(ns, 0, 2))
		old := createJob(t, ns, "again", 2, 0, gpuTemplate(ns, nil), nil, ann("2"), nil)
		waitMadePodGroup(t, ns, "again", madeFor("Job", old, 2, "", ""))
		waitBound(t, ns, boundCount(2))
		// No garbage collector runs here: the old PodGroup outlives its Job,
		// as it does in a cluster for a moment.
		background := metav1.DeletePropagationBackground
		if err := env.kube.BatchV1().Jobs(ns).Delete(context.Background(), "again", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatal(err)
		}
		deletePodsOf(t, ns)
		job := createJob(t, ns, "again", 2, 0, gpuTemplate(ns, nil), nil, ann("2"), nil)
		waitMadePodGroup(t, ns, "again", madeFor("Job", job, 2, "", ""))
		waitBound(t, ns, gangsBound(map[string]int{"again": 2}))
	})
}

// deletePodsOf deletes the pods of ns and waits until they are gone.
func deletePodsOf(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := env.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pods of "+ns+" gone", func() bool {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0
	})
}

// TestOwnerUnreadable: a pod whose owner the scheduler may not read (its
// RBAC rule removed) is scheduled as a gang of one, with an event that
// names the rule to add (SPEC §7).
func TestOwnerUnreadable(t *testing.T) {
	installWorkloadCRDs(t)
	ns := createGPUNamespace(t, "unreadable-owner")
	createNodes(t, rowNode(ns, 0, 2))
	cutRBAC(t, "ray.io")
	s := startScheduler(t)
	markRightsCut(s)
	tmpl := gpuTemplate(ns, nil)
	rc := createObject(t, ns, object("ray.io/v1", "RayCluster", "locked", map[string]any{
		"headGroupSpec":    map[string]any{"template": templateMap(t, tmpl)},
		"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(1), "minReplicas": int64(1), "template": templateMap(t, tmpl)}},
	}, nil, nil))
	createPods(t, podOf(ns, "locked-head", tmpl, ownerOf(rc), nil), podOf(ns, "locked-gpu-0", tmpl, ownerOf(rc), nil))
	waitPodEvent(t, ns, "locked-head", `add to its ClusterRole a rule with apiGroups ["ray.io"], resources ["rayclusters"], verbs [get, list, watch]`)
	waitBound(t, ns, podsNamed("locked-head", "locked-gpu-0"))
	noPodGroup(t, ns, "locked")
}

// TestKubernetesPodGroup: pods joined to Kubernetes' own PodGroup by
// spec.schedulingGroup are a gang (SPEC §1.2): nothing binds while its
// minCount cannot, its minCount may be changed and applies, and Cardinal
// writes its annotations on it. On an API server that does not serve it
// (1.34-1.36), Cardinal starts and schedules as before.
func TestKubernetesPodGroup(t *testing.T) {
	ctx := context.Background()
	ns := createGPUNamespace(t, "k8s-podgroup")
	s := startScheduler(t)
	if env.apiserverVersion != "" {
		createNodes(t, rowNode(ns, 0, 1))
		createPods(t, builder.MakePod(ns, "plain").GPU(1).NodeSelector(rowLabel, ns).Obj())
		waitBound(t, ns, podsNamed("plain"))
		if log, err := os.ReadFile(s.LogPath); err != nil || strings.Contains(string(log), "podgroups.scheduling.k8s.io") {
			t.Errorf("the scheduler's log names Kubernetes' PodGroups on a server that does not serve them (err %v)", err)
		}
		return
	}
	createNodes(t, rowNode(ns, 0, 3))
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "train"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}},
	}
	if _, err := env.kube.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		createPods(t, builder.MakePod(ns, fmt.Sprintf("train-%d", i)).GPU(1).NodeSelector(rowLabel, ns).SchedulingGroup("train").Obj())
	}
	holdBound(t, ns, 0) // 3 fit, its min is 4
	patch := []byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}`)
	if _, err := env.kube.SchedulingV1beta1().PodGroups(ns).Patch(ctx, "train", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, boundCount(3))
	waitFor(t, "cardinal.dev/scheduled=3 on the PodGroup", func() bool {
		got, err := env.kube.SchedulingV1beta1().PodGroups(ns).Get(ctx, "train", metav1.GetOptions{})
		return err == nil && got.Annotations["cardinal.dev/scheduled"] == "3"
	})
}

// TestWhyOfAGroupedPod: kubectl cardinal judges a waiting pod of a
// workload Cardinal grouped as a member of its gang, though the pod names
// no PodGroup (the grouper's ruling lives in the scheduler's memory until
// the pod binds): here its gang is held by its queue's card quota.
func TestWhyOfAGroupedPod(t *testing.T) {
	// With the operators' kinds served, kubectl cardinal reads them too,
	// and must still answer at once (why's bound, not its minute).
	installWorkloadCRDs(t)
	ns := "why-grouped"
	createQueue(t, builder.MakeQueue(ns).Card(h200, 0, 1).Obj())
	createNamespaceInQueue(t, ns, ns)
	createNodes(t, rowNode(ns, 0, 4))
	startScheduler(t)
	tmpl := gpuTemplate(ns, nil)
	sts := createStatefulSet(t, ns, "db", 2, tmpl, nil, map[string]string{v1alpha1.MinMemberAnnotation: "2"}, nil)
	createPods(t, podOf(ns, "db-0", tmpl, controlledBy(sts, "apps/v1", "StatefulSet"), map[string]string{"sts": "db"}),
		podOf(ns, "db-1", tmpl, controlledBy(sts, "apps/v1", "StatefulSet"), map[string]string{"sts": "db"}))
	waitMadePodGroup(t, ns, "db", madeFor("StatefulSet", sts, 2, "", ""))
	waitWaitingReason(t, ns, "db", "is held")
	a := why(t, "pod", ns, "db-0")
	if want := "gang " + ns + "/db is held"; a.State != inspect.Waiting || !strings.Contains(a.Why, want) {
		t.Errorf("why pod db-0: %s, %q; want Waiting, saying %q", a.State, a.Why, want)
	}
}

// TestGroupingWhenThingsChange: a PodGroup the grouper made and someone
// deleted while its pods wait is made again and the gang binds; one whose
// workload no longer asks for a gang, none of its pods placed, goes, and
// its pods run alone; one it may not make (a ResourceQuota on PodGroups) gets PodGroupNotMade and the
// pods run alone; a workload annotated after its pods started alone keeps
// its new pods alone (StartedAlone) rather than make a gang they could
// never complete.
func TestGroupingWhenThingsChange(t *testing.T) {
	ctx := context.Background()
	startScheduler(t)
	ann := func(n string) map[string]string { return map[string]string{v1alpha1.MinMemberAnnotation: n} }

	t.Run("a deleted PodGroup is made again", func(t *testing.T) {
		ns := createGPUNamespace(t, "pg-deleted")
		createNodes(t, rowNode(ns, 0, 2))
		job := createJob(t, ns, "again", 3, 0, gpuTemplate(ns, nil), nil, ann("3"), nil)
		waitMadePodGroup(t, ns, "again", madeFor("Job", job, 3, "", ""))
		holdBound(t, ns, 0) // 2 of 3 fit
		old, err := podGroups().SchedulingV1alpha1().PodGroups(ns).Get(ctx, "again", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := podGroups().SchedulingV1alpha1().PodGroups(ns).Delete(ctx, "again", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitMadePodGroup(t, ns, "again", func(pg *schedv1alpha1.PodGroup) error {
			if pg.UID == old.UID {
				return fmt.Errorf("not deleted yet")
			}
			return madeFor("Job", job, 3, "", "")(pg)
		})
		createNodes(t, rowNode(ns, 1, 1))
		waitBound(t, ns, gangsBound(map[string]int{"again": 3}))
	})

	t.Run("a workload that no longer asks for a gang", func(t *testing.T) {
		ns := createGPUNamespace(t, "pg-dropped")
		createNodes(t, rowNode(ns, 0, 2))
		tmpl := gpuTemplate(ns, nil)
		sts := createStatefulSet(t, ns, "db", 3, tmpl, nil, ann("3"), nil)
		for i := range 3 {
			createPods(t, podOf(ns, fmt.Sprintf("db-%d", i), tmpl, controlledBy(sts, "apps/v1", "StatefulSet"), map[string]string{"sts": "db"}))
		}
		waitMadePodGroup(t, ns, "db", madeFor("StatefulSet", sts, 3, "", ""))
		holdBound(t, ns, 0) // 2 of 3 fit: the gang waits
		patch := []byte(`{"metadata":{"annotations":{"cardinal.dev/min-member":null}}}`)
		if _, err := env.kube.AppsV1().StatefulSets(ns).Patch(ctx, "db", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// None of its pods placed, its PodGroup goes and its pods are
		// ruled on anew, as pods of a StatefulSet that asks for no gang:
		// two of them fit, alone, and no PodGroup is made again.
		waitBound(t, ns, boundCount(2))
		noPodGroup(t, ns, "db")
		holdBound(t, ns, 2)
	})

	t.Run("PodGroupNotMade", func(t *testing.T) {
		ns := createGPUNamespace(t, "pg-quota")
		createNodes(t, rowNode(ns, 0, 2))
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-podgroups"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/podgroups.scheduling.x-k8s.io": resource.MustParse("0")}}}
		made, err := env.kube.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What kube-controller-manager's quota controller would count (it
		// does not run here): none used, none allowed.
		made.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"count/podgroups.scheduling.x-k8s.io": resource.MustParse("0")}}
		if _, err := env.kube.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, made, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		createJob(t, ns, "capped", 2, 0, gpuTemplate(ns, nil), nil, ann("2"), nil)
		waitWorkloadEvent(t, ns, "Job", "capped", "PodGroupNotMade", "Cardinal could not make PodGroup capped")
		waitBound(t, ns, boundCount(2))
		noPodGroup(t, ns, "capped")
	})

	t.Run("annotated after its pods started alone", func(t *testing.T) {
		ns := createGPUNamespace(t, "started-alone")
		createNodes(t, rowNode(ns, 0, 3))
		tmpl := gpuTemplate(ns, nil)
		sts := createStatefulSet(t, ns, "db", 3, tmpl, nil, nil, nil)
		pod := func(i int) *corev1.Pod {
			return podOf(ns, fmt.Sprintf("db-%d", i), tmpl, controlledBy(sts, "apps/v1", "StatefulSet"), map[string]string{"sts": "db"})
		}
		createPods(t, pod(0), pod(1))
		waitBound(t, ns, podsNamed("db-0", "db-1"))
		patch := []byte(`{"metadata":{"annotations":{"cardinal.dev/min-member":"3"}}}`)
		if _, err := env.kube.AppsV1().StatefulSets(ns).Patch(ctx, "db", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the grouper to see the annotation", func() bool {
			s, err := env.kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
			return err == nil && s.Annotations[v1alpha1.MinMemberAnnotation] == "3"
		})
		createPods(t, pod(2))
		waitWorkloadEvent(t, ns, "StatefulSet", "db", "StartedAlone", "pods of it already run as pods of their own")
		waitBound(t, ns, podsNamed("db-2"))
	})
}
