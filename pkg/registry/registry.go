// Package registry lists Cardinal's scheduler plugins, so the binary, the
// tests, the benchmarks and kubectl cardinal register exactly the same set.
package registry

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// Registers the plugin args into kube-scheduler's configuration scheme.
	_ "cardinal.dev/cardinal/apis/config/scheme"
	"cardinal.dev/cardinal/pkg/cardquota"
	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/elasticquota"
	"cardinal.dev/cardinal/pkg/preemption"
	"cardinal.dev/cardinal/pkg/state"
)

// Plugins returns every Cardinal plugin's factory over st. The plugins
// share st, the one scheduling state, and nothing else: none imports
// another.
func Plugins(st *state.State) frameworkruntime.Registry {
	return frameworkruntime.Registry{
		coscheduling.Name: coscheduling.NewFactory(st),
		elasticquota.Name: elasticquota.NewFactory(st),
		cardquota.Name:    cardquota.NewFactory(st),
		preemption.Name:   preemption.NewFactory(st),
	}
}

// Options registers every Cardinal plugin with kube-scheduler's command.
func Options(st *state.State) []app.Option {
	var opts []app.Option
	for name, factory := range Plugins(st) {
		opts = append(opts, app.WithPlugin(name, factory))
	}
	return opts
}
