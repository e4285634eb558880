package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/pkg/controlplane"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/test/builder"
)

// TestConfigAppliesServerSide: everything `kubectl apply -k config/` would
// send is accepted by the apiserver in a server-side dry run. TestMain has
// already installed it for real; this checks again that every object
// validates, on its own, against the live API.
func TestConfigAppliesServerSide(t *testing.T) {
	objs, err := controlplane.KustomizeBuild(filepath.Join(env.root, "config"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment"} {
		if kinds[k] == 0 {
			t.Errorf("config/ renders no %s", k)
		}
	}
	a, err := controlplane.NewApplier(env.cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(context.Background(), objs, true); err != nil {
		t.Fatal(err)
	}
}

// TestBadPluginArgsFailStartup: a bad plugin argument stops the scheduler at
// start-up with the field's path in the message (SPEC §1.5).
func TestBadPluginArgsFailStartup(t *testing.T) {
	path := configWith(t, "permitWaitingTimeSeconds: 60", "permitWaitingTimeSeconds: -5")
	s, err := env.cp.StartScheduler(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	err = wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		return s.Exited() != nil, nil
	})
	if err != nil {
		t.Fatal("scheduler with a negative permitWaitingTimeSeconds did not stop")
	}
	log, _ := os.ReadFile(s.LogPath)
	want := "pluginConfig[CardinalGang].args.permitWaitingTimeSeconds"
	if !strings.Contains(string(log), want) {
		t.Errorf("start-up error does not name %s; log:\n%s", want, tail(string(log), 20))
	}
}

// configWith writes a copy of config/scheduler-config.yaml with lines
// changed, as a user would edit it, and returns its path. edits are pairs
// of old and new text.
func configWith(t *testing.T, edits ...string) string {
	t.Helper()
	data, err := os.ReadFile(env.configPath)
	if err != nil {
		t.Fatal(err)
	}
	changed := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		next := strings.Replace(changed, edits[i], edits[i+1], 1)
		if next == changed {
			t.Fatalf("config/scheduler-config.yaml no longer has %q; update this test", edits[i])
		}
		changed = next
	}
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCRDBasesInstallAlone: each generated CRD under config/crd/bases/
// installs on its own, as `kubectl apply -f` or a Helm chart's crds/
// directory would send it, on a control plane that has nothing else: the
// apiserver accepts the Queue CRD's CEL rules within its cost budget, and
// they run (a negative guarantee is refused, a valid queue accepted).
func TestCRDBasesInstallAlone(t *testing.T) {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	a, err := controlplane.NewApplier(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(env.root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	for _, f := range files {
		objs, err := controlplane.ReadManifests(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Apply(ctx, objs, false); err != nil {
			t.Errorf("%s does not install on its own: %v", filepath.Base(f), err)
		}
	}
	queues := cardinalclient.NewForConfigOrDie(cp.Config()).SchedulingV1alpha1().Queues()
	err = wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		q := builder.MakeQueue("alone").Guarantee(corev1.ResourceCPU, "2").Capability(corev1.ResourceCPU, "4").Card("NVIDIA-H200", 2, 4).Obj()
		_, err := queues.Create(ctx, q, metav1.CreateOptions{})
		return err == nil, nil // the CRD may not be served yet
	})
	if err != nil {
		t.Fatalf("a valid Queue was not accepted: %v", err)
	}
	bad := builder.MakeQueue("negative").Guarantee(corev1.ResourceCPU, "-1").Obj()
	if _, err := queues.Create(ctx, bad, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "guarantee must not be negative") {
		t.Errorf("a negative guarantee: %v, want refused as negative", err)
	}
}
