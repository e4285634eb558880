package state

import (
	"context"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/pkg/eventhandler"
)

// Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1, beta in 1.37) is a
// gang source beside scheduler-plugins' (SPEC §1.2): a pod joins one with
// spec.schedulingGroup.podGroupName, its gang policy's minCount is the
// gang's min, and a basic policy makes a gang of one. The state reads it
// only when the API server serves it: an informer on a missing API never
// syncs, and an API server of 1.34-1.36, or of 1.37 without the beta API
// enabled, must find Cardinal working as before.

// nativePodGroupsAPI names Kubernetes' PodGroups among the APIs the state
// can do without (apis.go).
const nativePodGroupsAPI = "podgroups.scheduling.k8s.io"

// nativeGroup is a Kubernetes PodGroup as the state keeps a gang's
// PodGroup: its metadata (labels and annotations carry Cardinal's queue,
// preemptibility and card request as on the other), and its minCount as
// minMember (1 for a basic policy). It has no minResources and no
// scheduleTimeoutSeconds.
func nativeGroup(pg *schedulingv1beta1.PodGroup) *schedv1alpha1.PodGroup {
	min := int32(1)
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil && g.MinCount > 0 {
		min = g.MinCount
	}
	return &schedv1alpha1.PodGroup{
		ObjectMeta: *pg.ObjectMeta.DeepCopy(),
		Spec:       schedv1alpha1.PodGroupSpec{MinMember: min},
	}
}

// servesNativePodGroups tells whether the API server serves Kubernetes'
// PodGroups. A server that cannot say (an error other than not found) is
// taken as not serving them: the state then works as on an older server.
func servesNativePodGroups(ctx context.Context, d discovery.DiscoveryInterface) bool {
	list, err := d.ServerResourcesForGroupVersion(schedulingv1beta1.SchemeGroupVersion.String())
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Reading whether the API server serves Kubernetes' PodGroups; they are not read")
		}
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "podgroups" {
			return true
		}
	}
	return false
}

// nativeLookEvery is how often the state looks again whether the API
// server serves Kubernetes' PodGroups, while it does not.
const nativeLookEvery = time.Minute

// nativeHandler is the informer and handler of Kubernetes' PodGroups, when
// the API server serves them; none otherwise, and the state looks again
// every nativeLookEvery (the beta API enabled later, or discovery failing
// at the start), reading them from when it does.
func (s *State) nativeHandler(ctx context.Context, kube informers.SharedInformerFactory, d discovery.DiscoveryInterface) []handlerOf {
	if d == nil {
		return nil
	}
	if !servesNativePodGroups(ctx, d) {
		klog.FromContext(ctx).V(2).Info("The API server does not serve Kubernetes' PodGroups (scheduling.k8s.io/v1beta1): gangs are scheduler-plugins PodGroups only, until it does")
		go s.lookForNative(ctx, kube, d)
		return nil
	}
	klog.FromContext(ctx).Info("Reading Kubernetes' PodGroups (scheduling.k8s.io/v1beta1) as gangs")
	s.wiring.native.Store(true)
	return []handlerOf{{
		informer: kube.Scheduling().V1beta1().PodGroups().Informer(),
		handler:  eventhandler.For(nil, s.OnNativePodGroup, s.OnNativePodGroupGone),
		api:      nativePodGroupsAPI,
	}}
}

// handlerOf is an informer feeding the state and its handler; api is set
// for the APIs the scheduler can do without (apis.go).
type handlerOf struct {
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandler
	api      string
}

// ServesNativePodGroups tells whether the state reads Kubernetes' own
// PodGroups: the API server served them when the state was attached.
func (s *State) ServesNativePodGroups() bool { return s.wiring.native.Load() }

// lookForNative waits until the API server serves Kubernetes' PodGroups,
// then feeds the state from them: their informer, from the scheduler's
// factory, started here (kube-scheduler started the others).
func (s *State) lookForNative(ctx context.Context, kube informers.SharedInformerFactory, d discovery.DiscoveryInterface) {
	err := wait.PollUntilContextCancel(ctx, nativeLookEvery, false, func(ctx context.Context) (bool, error) {
		return servesNativePodGroups(ctx, d), nil
	})
	if err != nil {
		return
	}
	klog.FromContext(ctx).Info("Reading Kubernetes' PodGroups (scheduling.k8s.io/v1beta1) as gangs, now that the API server serves them")
	inf := kube.Scheduling().V1beta1().PodGroups().Informer()
	if _, err := inf.AddEventHandler(eventhandler.For(nil, s.OnNativePodGroup, s.OnNativePodGroupGone)); err != nil {
		klog.FromContext(ctx).Error(err, "Reading Kubernetes' PodGroups")
		return
	}
	s.wiring.native.Store(true)
	kube.Start(ctx.Done())
}
