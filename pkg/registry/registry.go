// Package registry lists Cardinal's scheduler plugins, so the binary, the
// tests and the benchmarks register exactly the same set.
package registry

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// Registers the plugin args into kube-scheduler's configuration scheme.
	_ "cardinal.dev/cardinal/apis/config/scheme"
	"cardinal.dev/cardinal/pkg/cardquota"
	"cardinal.dev/cardinal/pkg/controllers"
	"cardinal.dev/cardinal/pkg/coscheduling"
	"cardinal.dev/cardinal/pkg/elasticquota"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/podgroups"
	"cardinal.dev/cardinal/pkg/preemption"
	"cardinal.dev/cardinal/pkg/queuecache"
	"cardinal.dev/cardinal/pkg/workload"
)

// Options registers every Cardinal plugin with kube-scheduler's command.
// The plugins share one queue cache (resources and cards), one queue
// resolver, one preemptibility classifier, one PodGroup informer, the set of
// gangs held back by their queue, and one runner of the status controllers.
func Options() []app.Option {
	classifier := workload.NewClassifier()
	runner := controllers.NewRunner()
	podGroups := &podgroups.Source{}
	holds := gang.NewHolds()
	queues := queuecache.New()
	resolver := &workload.Resolver{}
	shared := elasticquota.Shared{Queues: queues, Classifier: classifier, Controllers: runner, PodGroups: podGroups, Holds: holds, Resolver: resolver}
	return []app.Option{
		app.WithPlugin(coscheduling.Name, coscheduling.NewFactory(runner, podGroups, holds)),
		app.WithPlugin(elasticquota.Name, elasticquota.NewFactory(shared)),
		app.WithPlugin(cardquota.Name, cardquota.NewFactory(cardquota.Shared{Queues: queues, Resolver: resolver, PodGroups: podGroups, Holds: holds})),
		app.WithPlugin(preemption.Name, preemption.NewFactory(classifier)),
	}
}
