package integration

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// tenant is a client acting as a user who may do anything with pods in
// ns, as a team's members may, and nothing else.
func tenant(t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}}},
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "tenant"}},
	}
	if _, err := env.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.cp.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}}
	cs := kubernetes.NewForConfigOrDie(cfg)
	// The authorizer's cache takes the binding in a moment.
	if err := wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the tenant's rights did not apply: %v", err)
	}
	return cs
}

// TestPlacedAsOnlyFromTheScheduler: the admission policy config/ ships
// refuses a pod created with cardinal.dev/placed-as, and any change or
// removal of it, from anyone but the scheduler, whose Binding writes it
// (SPEC §3.7): a tenant cannot book its pods into another queue, or as
// non-preemptible work, for the next restart to believe. Nor can it
// create a pod of Cardinal's already on a node, past every queue check.
func TestPlacedAsOnlyFromTheScheduler(t *testing.T) {
	createNodes(t, gpuNodes("placedas", 1, 8)...)
	startScheduler(t)
	ns := createGPUNamespace(t, "placedas")
	ctx := context.Background()
	pods := tenant(t, ns).CoreV1().Pods(ns)
	const refused = "cardinal.dev/placed-as is written by cardinal-scheduler"

	forged := builder.MakePod(ns, "forged").GPU(1).Obj()
	forged.Annotations = map[string]string{v1alpha1.PlacedAsAnnotation: "other/non-preemptible"}
	if _, err := pods.Create(ctx, forged, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("a pod created with a placed-as annotation: err %v, want refused with %q", err, refused)
	}
	onNode := builder.MakePod(ns, "on-node").GPU(1).Obj()
	onNode.Spec.NodeName = "placedas-0"
	if _, err := pods.Create(ctx, onNode, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "cannot be created with spec.nodeName") {
		t.Errorf("a tenant's pod of cardinal-scheduler created on a node: err %v, want refused", err)
	}

	if _, err := pods.Create(ctx, builder.MakePod(ns, "p").GPU(1).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, podsNamed("p"))
	p, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Annotations[v1alpha1.PlacedAsAnnotation], ns+"/preemptible"; got != want {
		t.Errorf("placed-as %q after the scheduler bound the pod, want %q", got, want)
	}
	for what, patch := range map[string]string{
		"changed": `{"metadata":{"annotations":{"cardinal.dev/placed-as":"` + ns + `/non-preemptible"}}}`,
		"removed": `{"metadata":{"annotations":{"cardinal.dev/placed-as":null}}}`,
	} {
		if _, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil || !strings.Contains(err.Error(), refused) {
			t.Errorf("placed-as %s by a user: err %v, want refused", what, err)
		}
	}
	if _, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"x"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("a label change on a placed pod was refused: %v", err)
	}
}
