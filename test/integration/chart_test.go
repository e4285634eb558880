package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

// TestChartInstalls: charts/cardinal, rendered with Helm's own engine and
// its default values, installs on an empty real apiserver, and the
// scheduler runs on exactly what it installed (its RBAC, as its service
// account; its scheduler configuration, from its ConfigMap) and places a
// gang whole (SPEC §6).
func TestChartInstalls(t *testing.T) {
	ctx := context.Background()
	objs, err := controlplane.HelmTemplate(filepath.Join(env.root, "charts", "cardinal"), "cardinal", nil)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{APIServerVersion: env.apiserverVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	a, err := controlplane.NewApplier(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, objs, false); err != nil {
		t.Fatalf("installing the rendered chart: %v", err)
	}
	var config string
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			config, _, _ = unstructured.NestedString(o.Object, "data", "scheduler-config.yaml")
		}
	}
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := cp.StartScheduler(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if log, err := os.ReadFile(s.LogPath); err == nil {
			if line := forbidden(string(log)); line != "" {
				t.Errorf("the scheduler was refused by the chart's RBAC:\n%s", line)
			}
			if t.Failed() {
				t.Logf("scheduler log:\n%s", tail(string(log), 100))
			}
		}
	})
	kube := kubernetes.NewForConfigOrDie(cp.Config())
	if _, err := kube.CoreV1().Nodes().Create(ctx, builder.MakeNode("chart-0").GPU(h200, 2).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg := builder.MakePodGroup("default", "g", 2).Obj()
	if _, err := pgclient.NewForConfigOrDie(cp.Config()).SchedulingV1alpha1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The queue default, which the scheduler makes, has no card quota:
	// the gang asks for cpu.
	for i := range 2 {
		p := builder.MakePod("default", fmt.Sprintf("g-%d", i)).Req("cpu", "1").Label(schedv1alpha1.PodGroupLabel, "g").Obj()
		if _, err := kube.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, poll, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 2, nil
	})
	if err != nil {
		t.Fatalf("the gang was not placed by the scheduler the chart installed: %v", err)
	}
}
