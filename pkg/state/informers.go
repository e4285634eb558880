package state

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"

	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	cardinalinformers "cardinal.dev/cardinal/pkg/generated/informers/externalversions"
)

// The informers of PodGroups and Queues list their first items rather than
// stream them (client-go's watch-list). An apiserver ends a streamed list
// of a resource it has no fresh watch cache for (none watched it since the
// apiserver started) only at its next progress notification, a second
// later, and no pod is scheduled until the state has synced (SPEC §3.1).
// Lists of PodGroups and Queues are small. A list may be served from a
// watch cache a little behind the streamed pods and nodes, as every
// informer's was before client-go streamed them; the watch that follows
// brings it up to date, and the state takes changes in any order.

// listed marks a client whose informers list.
type listed struct{}

func (listed) IsWatchListSemanticsUnSupported() bool { return true }

// listedQueues is Cardinal's clientset, marked so its informers list.
type listedQueues struct {
	cardinalclient.Interface
	listed
}

// QueueInformers returns an informer factory for Queues that list.
func QueueInformers(cc cardinalclient.Interface) cardinalinformers.SharedInformerFactory {
	return cardinalinformers.NewSharedInformerFactory(listedQueues{Interface: cc}, 0)
}

// PodGroupInformers returns an informer factory whose PodGroup informer
// lists. scheduler-plugins' generated informer always streams; this one is
// the same informer over a ListWatch that does not.
func PodGroupInformers(pgc pgclient.Interface) pginformers.SharedInformerFactory {
	f := pginformers.NewSharedInformerFactory(pgc, 0)
	f.InformerFor(&schedv1alpha1.PodGroup{}, func(c pgclient.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := cache.NewListWatchFromClient(c.SchedulingV1alpha1().RESTClient(), "podgroups", metav1.NamespaceAll, fields.Everything())
		return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listed{}), &schedv1alpha1.PodGroup{}, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	return f
}
