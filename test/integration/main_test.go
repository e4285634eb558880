// Package integration runs Cardinal as a user would: the cardinal-scheduler
// binary with config/scheduler-config.yaml, against a real kube-apiserver and
// etcd, installed from config/ exactly as `kubectl apply -k config/` does.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"

	"cardinal.dev/cardinal/pkg/controlplane"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
)

// env is the control plane shared by the package's tests. Each test works in
// namespaces and on nodes of its own.
var env struct {
	cp         *controlplane.ControlPlane
	kube       kubernetes.Interface
	cardinal   cardinalclient.Interface
	root       string
	configPath string
	// apiserverVersion is the older kube-apiserver minor the package runs
	// against, "" for the one Cardinal is built with.
	apiserverVersion string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	root, err := controlplane.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Deployments, ReplicaSets and Jobs behave as in a cluster (the card
	// quota tests scale a Deployment as an HPA does). CARDINAL_APISERVER_VERSION
	// runs the package against an older supported kube-apiserver (SPEC §6;
	// `make integration-versions` runs the matrix's subset); its
	// kube-controller-manager is then left out, as one newer than the
	// apiserver is outside Kubernetes' version skew policy.
	// The Job controller makes the pods of the Jobs the grouper makes
	// gangs of (SPEC §7); Kubernetes' own PodGroups are served, as a 1.37
	// cluster that enables them does (SPEC §1.2).
	opts := controlplane.Options{
		Controllers:   []string{"deployment-controller", "replicaset-controller", "job-controller"},
		APIServerArgs: []string{"--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"},
	}
	if v := os.Getenv("CARDINAL_APISERVER_VERSION"); v != "" {
		opts = controlplane.Options{APIServerVersion: v}
	}
	env.apiserverVersion = opts.APIServerVersion
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	env.cp, env.root = cp, root
	env.configPath = filepath.Join(root, "config", "scheduler-config.yaml")
	env.kube = kubernetes.NewForConfigOrDie(cp.Config())
	env.cardinal = cardinalclient.NewForConfigOrDie(cp.Config())

	if err := cp.Install(ctx, filepath.Join(root, "config")); err != nil {
		fmt.Fprintln(os.Stderr, "installing config/:", err)
		return 1
	}
	return m.Run()
}
