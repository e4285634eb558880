package grouper

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/state"
)

// replaySync bounds how long Replay waits for the custom workload kinds to
// be listed.
const replaySync = 10 * time.Second

// Replay gives a tool's read-only copy of the scheduling state (kubectl
// cardinal) what the running scheduler's grouper decided, which lives in
// that scheduler's memory: each pending pod the grouper may group is put
// in its workload's gang, when the PodGroup the grouper made for that
// workload exists. It makes nothing. f holds the tool's informers
// (started and synced), getPodGroup reads a PodGroup.
func Replay(ctx context.Context, st *state.State, f informers.SharedInformerFactory, cfg *rest.Config, getPodGroup func(namespace, name string) (*schedv1alpha1.PodGroup, error)) error {
	kinds := st.Settings().GroupedKinds
	if len(kinds) == 0 {
		return nil
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	// The custom kinds' informers live only as long as Replay: Shutdown
	// waits for them to stop, which they do once their context ends.
	readCtx, stop := context.WithCancel(ctx)
	r := newReader(f, kube, dyn, d, kinds)
	r.discover(readCtx)
	defer func() {
		stop()
		r.dynamic.Shutdown()
	}()
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, replaySync, true, func(context.Context) (bool, error) {
		return r.synced(), nil
	})
	pods, err := f.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if !st.AwaitsGrouping(pod) {
			continue
		}
		chain, err := Walk(r, pod)
		if err != nil {
			continue
		}
		plan, _ := PlanFor(chain, kinds, r.jobsOf)
		if plan == nil {
			continue
		}
		pg, err := getPodGroup(pod.Namespace, plan.Name)
		if err != nil || pg.Annotations[v1alpha1.GroupedByAnnotation] != plan.GroupedBy() {
			continue
		}
		st.Grouped([]*corev1.Pod{pod}, gang.KeyOf(pg))
	}
	return nil
}

// synced tells whether every custom kind the reader reads has been listed.
func (r *reader) synced() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, ck := range r.custom {
		if ck.informer != nil && !ck.informer.Informer().HasSynced() {
			return false
		}
	}
	return true
}
