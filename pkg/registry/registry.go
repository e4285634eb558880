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
	"cardinal.dev/cardinal/pkg/state"
)

// Options registers every Cardinal plugin with kube-scheduler's command.
// The plugins share st, the one scheduling state, and nothing else: none
// imports another.
func Options(st *state.State) []app.Option {
	return []app.Option{
		app.WithPlugin(coscheduling.Name, coscheduling.NewFactory(st)),
		app.WithPlugin(elasticquota.Name, elasticquota.NewFactory(st)),
		app.WithPlugin(cardquota.Name, cardquota.NewFactory(st)),
		app.WithPlugin(preemption.Name, preemption.NewFactory(st)),
	}
}
