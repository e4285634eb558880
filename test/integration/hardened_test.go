package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// shipped decodes the object of kind and name that `kubectl apply -k
// config/` installs into out.
func shipped(t *testing.T, kind, name string, out any) {
	t.Helper()
	objs, err := controlplane.KustomizeBuild(filepath.Join(env.root, "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("config/ has no %s %s", kind, name)
}

// TestShippedDeploymentIsHardened: the Deployment config/ ships is what a
// security review expects (SPEC §6), and its pods pass Pod Security
// "restricted" on a real apiserver: in cardinal-system, which config/
// labels so, and in a namespace of the test's, where a copy that drops
// the seccomp profile is refused (the check is live).
func TestShippedDeploymentIsHardened(t *testing.T) {
	var d appsv1.Deployment
	shipped(t, "Deployment", "cardinal-scheduler", &d)
	var pdb policyv1.PodDisruptionBudget
	shipped(t, "PodDisruptionBudget", "cardinal-scheduler", &pdb)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	image := c.Image[strings.LastIndex(c.Image, "/")+1:]
	for what, ok := range map[string]bool{
		"two replicas":                       d.Spec.Replicas != nil && *d.Spec.Replicas == 2,
		"spread across nodes":                len(spec.TopologySpreadConstraints) > 0 && spec.TopologySpreadConstraints[0].TopologyKey == corev1.LabelHostname,
		"a PodDisruptionBudget keeping one":  pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() == 1,
		"a pinned image tag":                 strings.Contains(image, ":") && !strings.HasSuffix(image, ":latest"),
		"cpu and memory requests and limits": !c.Resources.Requests.Cpu().IsZero() && !c.Resources.Requests.Memory().IsZero() && !c.Resources.Limits.Cpu().IsZero() && !c.Resources.Limits.Memory().IsZero(),
		"liveness and readiness probes":      c.LivenessProbe != nil && c.ReadinessProbe != nil,
		"a read-only root filesystem":        c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem,
		"no capabilities":                    c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && len(c.SecurityContext.Capabilities.Drop) == 1 && c.SecurityContext.Capabilities.Drop[0] == "ALL" && len(c.SecurityContext.Capabilities.Add) == 0,
		"non-root":                           spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot,
		"seccompProfile RuntimeDefault":      spec.SecurityContext != nil && spec.SecurityContext.SeccompProfile != nil && spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
		"its PDB selecting its pods":         pdb.Spec.Selector != nil && pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] == d.Spec.Template.Labels["app.kubernetes.io/name"],
	} {
		if !ok {
			t.Errorf("the shipped Deployment lacks %s", what)
		}
	}

	ctx := context.Background()
	ns, err := env.kube.CoreV1().Namespaces().Get(ctx, "cardinal-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("cardinal-system is not labelled pod-security.kubernetes.io/enforce: restricted: %v", ns.Labels)
	}
	restricted := createNamespace(t, "restricted")
	patchLabels(t, "", "namespaces", restricted, map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: restricted, Name: "scheduler"}, Spec: *spec.DeepCopy()}
	pod.Spec.ServiceAccountName = ""
	if _, err := env.kube.CoreV1().Pods(restricted).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the shipped Deployment's pod is refused under Pod Security restricted: %v", err)
	}
	weak := pod.DeepCopy()
	weak.Spec.SecurityContext.SeccompProfile = nil
	weak.Spec.Containers[0].SecurityContext.SeccompProfile = nil
	if _, err := env.kube.CoreV1().Pods(restricted).Create(ctx, weak, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), "seccompProfile") {
		t.Errorf("a pod without a seccomp profile was not refused under Pod Security restricted (err %v): the check is not live", err)
	}
	if env.apiserverVersion != "" {
		return // no ReplicaSet controller runs beside an older apiserver
	}
	// The ReplicaSet controller creates the installed Deployment's pods
	// in cardinal-system: Pod Security admitted them.
	err = wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := env.kube.CoreV1().Pods("cardinal-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cardinal-scheduler"})
		return err == nil && len(pods.Items) == 2, err
	})
	if err != nil {
		rs, _ := env.kube.AppsV1().ReplicaSets("cardinal-system").List(ctx, metav1.ListOptions{})
		var why []string
		if rs != nil {
			for _, r := range rs.Items {
				why = append(why, fmt.Sprintf("%s: %+v", r.Name, r.Status.Conditions))
			}
		}
		t.Errorf("the installed Deployment's two pods were not created in cardinal-system: %v; %v", err, why)
	}
}

// cutRBAC takes from config/'s ClusterRole the rules for the API groups
// given, until the test ends.
func cutRBAC(t *testing.T, groups ...string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	roles := env.kube.RbacV1().ClusterRoles()
	orig, err := roles.Get(ctx, "cardinal-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cut := orig.DeepCopy()
	cut.Rules = nil
	for _, r := range orig.Rules {
		if !slices.ContainsFunc(r.APIGroups, func(g string) bool { return slices.Contains(groups, g) }) {
			cut.Rules = append(cut.Rules, r)
		}
	}
	if _, err := roles.Update(ctx, cut, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		cur, err := roles.Get(ctx, "cardinal-scheduler", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Rules = orig.Rules
		if _, err := roles.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// TestMissingAPIsReported: without the RBAC to read PodGroups (as without
// their CRD), the scheduler says so in its log and in an event on each
// gang pod, and keeps scheduling the pods that need none; without the
// right to read Queues, pods wait with the reason (a Queue it cannot see
// may limit them). Once it may read them, the waiting pods run (SPEC §6).
func TestMissingAPIsReported(t *testing.T) {
	createNodes(t, gpuNodes("unreadable", 1, 8)...)
	createQueue(t, builder.MakeQueue("unreadable-q").Card(h200, 0, 8).Obj())
	saysMissing := func(t *testing.T, s *controlplane.Scheduler) {
		t.Helper()
		if log, err := os.ReadFile(s.LogPath); err != nil || !strings.Contains(string(log), "Cardinal cannot read an API it uses") {
			t.Errorf("the scheduler log does not say an API is missing (err %v)", err)
		}
	}

	t.Run("PodGroups", func(t *testing.T) {
		ns := createNamespace(t, "no-podgroups")
		createPodGroup(t, ns, "g", 2)
		restore := cutRBAC(t, "scheduling.x-k8s.io")
		s := startScheduler(t)
		markRightsCut(s)
		named := builder.MakePod(ns, "named").Label("cardinal.dev/queue", "unreadable-q").GPU(1).Obj()
		createPods(t, append(gangPodsOf(ns, "g", 2, 0), named, builder.MakePod(ns, "plain").Req("cpu", "100m").Obj())...)
		waitBound(t, ns, podsNamed("plain", "named"))
		waitPodEvent(t, ns, "g-0", "PodGroup "+ns+"/g cannot be read: the scheduler may not list and watch podgroups.scheduling.x-k8s.io")
		neverBound(t, ns, "g-0", "g-1")
		saysMissing(t, s)
		restore()
		waitBound(t, ns, podsNamed("g-0", "g-1"))
	})

	t.Run("Queues", func(t *testing.T) {
		ns := createNamespace(t, "no-queues")
		restore := cutRBAC(t, "scheduling.cardinal.dev")
		s := startScheduler(t)
		markRightsCut(s)
		named := builder.MakePod(ns, "named").Label("cardinal.dev/queue", "unreadable-q").GPU(1).Obj()
		createPods(t, named, builder.MakePod(ns, "plain").Req("cpu", "100m").Obj())
		waitPodEvent(t, ns, "named", "queue unreadable-q cannot be read: the scheduler may not list and watch queues.scheduling.cardinal.dev")
		waitPodEvent(t, ns, "plain", "queue default cannot be read")
		neverBound(t, ns, "named", "plain")
		saysMissing(t, s)
		restore()
		waitBound(t, ns, podsNamed("named", "plain"))
	})
}

// TestCoordinatedLeaderElectionKeptOff: with CoordinatedLeaderElection
// turned on by flag, kube-scheduler's start-up would make the scheduler a
// candidate for the default scheduler's lease; it is turned off, said in
// the log, and the scheduler schedules on its own lease (SPEC §6).
func TestCoordinatedLeaderElectionKeptOff(t *testing.T) {
	createNodes(t, gpuNodes("cle", 1, 8)...)
	s := startScheduler(t, "--feature-gates=CoordinatedLeaderElection=true")
	ns := createNamespace(t, "cle")
	createPods(t, builder.MakePod(ns, "p").Req("cpu", "100m").Obj())
	waitBound(t, ns, podsNamed("p"))
	if log, err := os.ReadFile(s.LogPath); err != nil || !strings.Contains(string(log), "Turning CoordinatedLeaderElection off") {
		t.Errorf("the scheduler log does not say CoordinatedLeaderElection was turned off (err %v)", err)
	}
	cands, err := env.kube.CoordinationV1beta1().LeaseCandidates("kube-system").List(context.Background(), metav1.ListOptions{})
	if err == nil && len(cands.Items) > 0 {
		t.Errorf("the scheduler stood for a lease: %v", cands.Items)
	}
}

// TestWithoutCRDs: on a cluster given config/ without its CRDs, the
// scheduler starts and schedules a pod that needs neither PodGroups nor
// Queues (the default queue stands in without quota: no Queue can limit
// it), and says why in an event on each pod that needs one (SPEC §6). Its
// own control plane: the shared one has the CRDs.
func TestWithoutCRDs(t *testing.T) {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	objs, err := controlplane.KustomizeBuild(filepath.Join(env.root, "config"))
	if err != nil {
		t.Fatal(err)
	}
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "CustomResourceDefinition" })
	a, err := controlplane.NewApplier(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, objs, false); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	if _, err := kube.CoreV1().Nodes().Create(ctx, builder.MakeNode("nocrd-0").GPU(h200, 8).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nocrd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := cp.StartScheduler(env.configPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	named := builder.MakePod("nocrd", "named").Label("cardinal.dev/queue", "team").GPU(1).Obj()
	for _, p := range append(gangPodsOf("nocrd", "g", 2, 0), named, builder.MakePod("nocrd", "plain").Req("cpu", "100m").Obj()) {
		if _, err := kube.CoreV1().Pods("nocrd").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods("nocrd").Get(ctx, "plain", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", nil
	})
	if err != nil {
		log, _ := os.ReadFile(s.LogPath)
		t.Fatalf("a pod that needs no CRD was not bound: %v\n%s", err, tail(string(log), 60))
	}
	for pod, want := range map[string]string{
		"g-0":   "PodGroup nocrd/g cannot be read: the CRD podgroups.scheduling.x-k8s.io is not installed",
		"named": "queue team cannot be read: the CRD queues.scheduling.cardinal.dev is not installed",
	} {
		err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
			evs, err := kube.EventsV1().Events("nocrd").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if e.Regarding.Name == pod && strings.Contains(e.Note, want) {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("no event on pod %s containing %q", pod, want)
		}
	}
	holdFor(t, holdWindow, func() error {
		for _, name := range []string{"g-0", "g-1", "named"} {
			if p, err := kube.CoreV1().Pods("nocrd").Get(ctx, name, metav1.GetOptions{}); err == nil && p.Spec.NodeName != "" {
				return fmt.Errorf("pod %s bound though what it needs cannot be read", name)
			}
		}
		return s.Exited()
	})
	if log, err := os.ReadFile(s.LogPath); err != nil || !strings.Contains(string(log), "Cardinal cannot read an API it uses") {
		t.Errorf("the scheduler log does not say an API is missing (err %v)", err)
	}
}
