package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/pkg/podgroupstatus"
)

// explain runs the kubectl cardinal plugin as a user would: queues, then
// why for the first gang held back by admission (or else the first that
// waits).
func explain(ctx context.Context, step func(string, ...any), plugin, kubeconfig string) error {
	run := func(args ...string) error {
		args = append([]string{"--kubeconfig", kubeconfig}, args...)
		step("kubectl cardinal %s", strings.Join(args[2:], " "))
		cmd := exec.CommandContext(ctx, plugin, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}
	if err := run("queues"); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	pgs, err := pgclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var waiting string
	var ns string
	for _, pg := range pgs.Items {
		reason := pg.Annotations[podgroupstatus.WaitingReasonAnnotation]
		if reason == "" {
			continue
		}
		if strings.Contains(reason, " is held: ") {
			waiting, ns = pg.Name, pg.Namespace
			break
		}
		if waiting == "" {
			waiting, ns = pg.Name, pg.Namespace
		}
	}
	fmt.Println()
	if waiting == "" {
		fmt.Println("No gang waits.")
		return nil
	}
	return run("why", "podgroup/"+waiting, "-n", ns)
}
