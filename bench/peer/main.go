// Command scheduler-plugins-scheduler is kube-scheduler with
// kubernetes-sigs/scheduler-plugins' Coscheduling and CapacityScheduling,
// at the release Cardinal's go.mod pins, built in its own module because
// that release pairs with an older Kubernetes than Cardinal. `make bench`
// runs it beside cardinal-scheduler on the same workloads.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/scheduler-plugins/pkg/capacityscheduling"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"

	// Registers the plugins' args with the configuration scheme.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(coscheduling.Name, coscheduling.New),
		app.WithPlugin(capacityscheduling.Name, capacityscheduling.New),
	)
	os.Exit(cli.Run(command))
}
