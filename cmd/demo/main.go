// Command demo shows Cardinal scheduling real workloads: it starts a control
// plane (etcd and kube-apiserver), installs config/ as `kubectl apply -k`
// would, creates simulated GPU nodes, runs cardinal-scheduler with
// config/scheduler-config.yaml, applies the example workloads, plays the
// kubelet for bound pods, and prints where everything went. Then it plays
// further acts one file at a time (by default a queue borrowing idle cards,
// then another queue's job reclaiming them, then a Job and a JobSet that
// Cardinal makes gangs of by itself) and prints what each act placed and
// evicted, and why. It plays JobSet's controller too (jobset.go); the Job
// controller is kube-controller-manager's. It ends with what kubectl cardinal says: every
// queue's use, and why one held gang waits.
//
//	go run ./cmd/demo --nodes examples/nodes.yaml --workloads examples/queues.yaml,examples/gang.yaml --then ""
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"cardinal.dev/cardinal/pkg/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := controlplane.ModuleRoot()
	if err != nil {
		return err
	}
	ex := func(f string) string { return filepath.Join(root, "examples", f) }
	nodes := flag.String("nodes", ex("nodes.yaml"), "YAML file of the simulated nodes")
	workloads := flag.String("workloads", strings.Join([]string{ex("namespaces.yaml"), ex("queues.yaml"), ex("gang.yaml"), ex("elastic.yaml"), ex("pods.yaml")}, ","),
		"comma-separated YAML files applied in order (namespaces, queues, PodGroups, pods...)")
	then := flag.String("then", strings.Join([]string{ex("borrow.yaml"), ex("reclaim.yaml"), ex("workloads.yaml")}, ","),
		"comma-separated YAML files applied one at a time once the placements settle, each an act of its own (\"\" for none)")
	schedConfig := flag.String("config", filepath.Join(root, "config", "scheduler-config.yaml"), "scheduler configuration")
	settle := flag.Duration("settle", 8*time.Second, "how long nothing may change before the placement is reported")
	hold := flag.Bool("hold", false, "keep the control plane running after the report, until interrupted")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	// The Job controller makes the pods of the Jobs the last act runs,
	// which Cardinal groups into gangs by itself.
	step("starting etcd, kube-apiserver and kube-controller-manager's Job controller")
	cp, err := controlplane.Start(ctx, controlplane.Options{Controllers: []string{"job-controller"}})
	if err != nil {
		return err
	}
	defer cp.Stop()
	applier, err := controlplane.NewApplier(cp.Config())
	if err != nil {
		return err
	}

	step("installing config/ (CRDs, RBAC, scheduler configuration), and stand-ins for the CRDs of JobSet, LeaderWorkerSet, Kubeflow and Ray")
	objs, err := controlplane.KustomizeBuild(filepath.Join(root, "config"))
	if err != nil {
		return err
	}
	crds, err := controlplane.ReadManifests(ex("workload-crds.yaml"))
	if err != nil {
		return err
	}
	objs = append(objs, crds...)
	if err := applier.Apply(ctx, objs, false); err != nil {
		return err
	}

	step("creating nodes from %s", *nodes)
	nodeObjs, err := controlplane.ReadManifests(*nodes)
	if err != nil {
		return err
	}
	if err := applier.Apply(ctx, nodeObjs, false); err != nil {
		return err
	}

	step("starting cardinal-scheduler with %s", *schedConfig)
	sched, err := cp.StartScheduler(*schedConfig, "--v=2")
	if err != nil {
		return err
	}
	defer sched.Stop()

	files := strings.Split(*workloads, ",")
	step("applying %s", strings.Join(files, ", "))
	workObjs, err := controlplane.ReadManifests(files...)
	if err != nil {
		return err
	}
	if err := applier.Apply(ctx, workObjs, false); err != nil {
		return err
	}

	kube := kubernetes.NewForConfigOrDie(cp.Config())
	dyn := dynamic.NewForConfigOrDie(cp.Config())
	if err := playJobSetController(ctx, dyn, kube, workObjs); err != nil {
		return err
	}
	step("waiting for placements to settle (kubelet simulated: bound pods are marked Running)")
	if err := settlePods(ctx, kube, sched, *settle); err != nil {
		return fmt.Errorf("%w (scheduler log: %s)", err, sched.LogPath)
	}
	step("done")
	fmt.Println()
	if err := report(ctx, os.Stdout, cp.Config()); err != nil {
		return err
	}
	for i, file := range strings.Split(*then, ",") {
		if file == "" {
			continue
		}
		fmt.Println()
		before, err := podKeys(ctx, kube)
		if err != nil {
			return err
		}
		step("act %d: applying %s", i+2, file)
		objs, err := controlplane.ReadManifests(file)
		if err != nil {
			return err
		}
		if err := applier.Apply(ctx, objs, false); err != nil {
			return err
		}
		if err := playJobSetController(ctx, dyn, kube, objs); err != nil {
			return err
		}
		if err := settlePods(ctx, kube, sched, *settle); err != nil {
			return fmt.Errorf("%w (scheduler log: %s)", err, sched.LogPath)
		}
		step("act %d settled", i+2)
		fmt.Println()
		if err := reportAct(ctx, os.Stdout, cp.Config(), before); err != nil {
			return err
		}
	}
	kubeconfig, err := cp.WriteKubeconfig("admin.kubeconfig", false)
	if err != nil {
		return err
	}
	fmt.Println()
	if err := explain(ctx, step, filepath.Join(root, "bin", "kubectl-cardinal"), kubeconfig); err != nil {
		return err
	}
	if *hold {
		fmt.Printf("\nThe control plane keeps running. Try:\n  kubectl --kubeconfig %s get queues,podgroups,pods -A\n  bin/kubectl-cardinal --kubeconfig %[1]s gangs -A\nScheduler log: %s\nPress Ctrl-C to stop.\n", kubeconfig, sched.LogPath)
		<-ctx.Done()
	}
	return nil
}
