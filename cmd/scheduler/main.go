// Command cardinal-scheduler is kube-scheduler with every Cardinal plugin
// registered. It takes kube-scheduler's flags; run it with
// --config=config/scheduler-config.yaml for the cardinal-scheduler profile.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"cardinal.dev/cardinal/pkg/registry"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(registry.Options()...)))
}
