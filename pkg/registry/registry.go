// Package registry lists Cardinal's scheduler plugins, so the binary, the
// tests and the benchmarks register exactly the same set.
package registry

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// Registers the plugin args into kube-scheduler's configuration scheme.
	_ "cardinal.dev/cardinal/apis/config/scheme"
	"cardinal.dev/cardinal/pkg/cardquota"
	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/elasticquota"
	"cardinal.dev/cardinal/pkg/preemption"
)

// Options registers every Cardinal plugin with kube-scheduler's command.
func Options() []app.Option {
	return []app.Option{
		app.WithPlugin(coscheduling.Name, coscheduling.New),
		app.WithPlugin(elasticquota.Name, elasticquota.New),
		app.WithPlugin(cardquota.Name, cardquota.New),
		app.WithPlugin(preemption.Name, preemption.New),
	}
}
