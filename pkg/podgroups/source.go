// Package podgroups gives every Cardinal plugin the same PodGroup informer,
// so the gang plugin and the queue plugin never disagree about whether a
// PodGroup exists or what it says.
package podgroups

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"
)

// Source starts one PodGroup informer, for whichever plugin asks first.
type Source struct {
	once     sync.Once
	informer cache.SharedIndexInformer
	lister   pglisters.PodGroupLister
	err      error
}

// Get returns the started and synced informer and its lister.
func (s *Source) Get(ctx context.Context, cfg *rest.Config) (cache.SharedIndexInformer, pglisters.PodGroupLister, error) {
	s.once.Do(func() {
		// Custom resources have no protobuf encoding: their clients speak JSON.
		cfg = rest.CopyConfig(cfg)
		cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
		client, err := pgclient.NewForConfig(cfg)
		if err != nil {
			s.err = err
			return
		}
		factory := pginformers.NewSharedInformerFactory(client, 0)
		pgs := factory.Scheduling().V1alpha1().PodGroups()
		s.informer, s.lister = pgs.Informer(), pgs.Lister()
		factory.Start(ctx.Done())
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				s.err = fmt.Errorf("cache of %v did not sync", typ)
			}
		}
	})
	return s.informer, s.lister, s.err
}

// EventRef is what an event about the PodGroup namespace/name points at.
func EventRef(lister pglisters.PodGroupLister, namespace, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{APIVersion: schedv1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup", Namespace: namespace, Name: name}
	if pg, err := lister.PodGroups(namespace).Get(name); err == nil {
		ref.UID = pg.UID
	}
	return ref
}
