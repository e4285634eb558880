package grouper

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
)

// mend brings the PodGroup a grouped pod is in up to date with its
// workload: a Job's completions left, a JobSet's Jobs, an annotation
// changed. A PodGroup someone else made is left alone.
func (g *Grouper) mend(ctx context.Context, pod *corev1.Pod, name string) (reconcile.Result, error) {
	have, err := g.podGroup(pod.Namespace, name)
	if apierrors.IsNotFound(err) {
		// Deleted while pods the grouper put in its gang wait for it:
		// made again, if its workload still asks for it.
		if !g.State.GroupedAndWaiting(pod) {
			return reconcile.Result{}, nil
		}
		have = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if have != nil && have.Annotations[v1alpha1.GroupedByAnnotation] == "" {
		return reconcile.Result{}, nil
	}
	chain, err := Walk(g.reader, pod)
	if errors.Is(err, ErrOwnerUnseen) {
		return reconcile.Result{RequeueAfter: retryUnseen}, nil // not read yet (after a start): asked again
	}
	if err != nil {
		return reconcile.Result{}, nil // its workload is gone or unreadable: nothing to mend from
	}
	plan, _ := PlanFor(chain, g.Kinds, g.reader.jobsOf)
	k := gang.Key(pod.Namespace + "/" + name)
	if have != nil && plan == nil && madeForChain(have, chain) {
		// Its workload asks for no gang any more (its annotation
		// removed): while none of its pods is placed, as this process
		// has seen them since it ruled on them, the PodGroup goes, and
		// its pods are ruled on anew once it is gone (asked again
		// below); a gang placed keeps it until its pods end.
		if !g.State.Synced() {
			return reconcile.Result{RequeueAfter: retryUnseen}, nil // judged once the state has loaded
		}
		if st, ok := g.State.GangStatus(k); !ok || st.Placed > 0 || !g.State.GroupedAndWaiting(pod) {
			return reconcile.Result{}, nil
		}
		klog.FromContext(ctx).V(2).Info("Deleting a PodGroup its workload no longer asks for", "podGroup", klog.KObj(have))
		if err := g.client.Delete(ctx, have.DeepCopy(), client.Preconditions{UID: &have.UID}); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: retryUnseen}, nil
	}
	if plan == nil || plan.Name != name {
		if have != nil {
			return reconcile.Result{}, nil
		}
		switch released, stillThere := g.State.Released(k); {
		case released:
			// Its PodGroup is gone and its workload asks for it no
			// more: its pods are ruled on anew rather than wait for a
			// PodGroup no one will make.
			klog.FromContext(ctx).V(2).Info("A PodGroup is gone and its workload no longer asks for it: its waiting pods are ruled on anew", "podGroup", klog.KRef(pod.Namespace, name))
			return reconcile.Result{}, errRuleAgain
		case stillThere:
			// The scheduler's own informer has not seen it go yet.
			return reconcile.Result{RequeueAfter: retryUnseen}, nil
		}
		return reconcile.Result{}, nil
	}
	if have == nil {
		klog.FromContext(ctx).V(2).Info("Making again a PodGroup deleted while its pods wait", "podGroup", klog.KRef(pod.Namespace, name))
		_, err := g.ensure(ctx, pod, plan)
		return reconcile.Result{}, err
	}
	want := PodGroupFor(plan, pod.Namespace)
	if action, err := Decide(have, want, g.ownerLives(pod.Namespace)); err != nil || action != Update {
		return reconcile.Result{}, err
	}
	klog.FromContext(ctx).V(2).Info("Mending a PodGroup from its workload", "podGroup", klog.KObj(have), "minMember", plan.Min, "minFrom", plan.MinFrom)
	return reconcile.Result{}, client.IgnoreNotFound(g.client.Patch(ctx, Mended(have.DeepCopy(), want), client.MergeFrom(have)))
}

// madeForChain tells whether pg names one of chain's workloads as its
// owner: Cardinal made it for the pod's own workload.
func madeForChain(pg *schedv1alpha1.PodGroup, chain Chain) bool {
	if len(pg.OwnerReferences) == 0 {
		return false
	}
	for _, l := range chain.Links {
		if l.Obj.GetUID() == pg.OwnerReferences[0].UID {
			return true
		}
	}
	return false
}

// errRuleAgain is mend's word that a pod's gang was released and the pod
// awaits a ruling again.
var errRuleAgain = errors.New("the pod awaits a ruling again")

// ownerLives tells whether the workload a PodGroup names as its owner,
// in namespace, still exists: gone only when a reader that has listed its
// kind finds no object of that name, or one of another UID (deleted and
// made again), or the cluster no longer serves its kind. An owner of a
// kind Cardinal does not read, or may not read, is taken as living: the
// PodGroup is left alone (PodGroupNameConflict). Any other answer (its
// kind not listed yet after a start) is an error, and the PodGroup is
// left as it is until the owner can be read.
func (g *Grouper) ownerLives(namespace string) func(metav1.OwnerReference) (bool, error) {
	return func(ref metav1.OwnerReference) (bool, error) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return true, nil
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
		switch {
		case !g.reader.Reads(gk):
			return true, nil
		case g.reader.Absent(gk):
			return false, nil
		}
		obj, err := g.reader.Get(gk, namespace, ref.Name)
		var unreadable *Unreadable
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case errors.As(err, &unreadable):
			return true, nil
		case err != nil:
			return false, err
		}
		return obj.GetUID() == ref.UID, nil
	}
}

// askForMember asks for a pod of the gang of obj, a PodGroup the grouper
// made, one waiting if it has one.
func (g *Grouper) askForMember(obj any, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pg, ok := obj.(*schedv1alpha1.PodGroup)
	if !ok || pg.Annotations[v1alpha1.GroupedByAnnotation] == "" {
		return
	}
	k := gang.KeyOf(pg)
	if p := g.State.GangMember(k); p != nil {
		g.askToMend(p, k, q)
	}
}

// askToMend asks for a reconcile of pod, a member of a PodGroup the
// grouper made, that mends the PodGroup from its workload. A pod's own
// events do not: its workload is what changed, or its PodGroup, never the
// pod (a pod ruled on with its siblings would otherwise mend their
// PodGroup once for each of them).
func (g *Grouper) askToMend(p *corev1.Pod, k gang.Key, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	g.mends.Store(key, k)
	q.Add(reconcile.Request{NamespacedName: key})
}

// askAnotherToMend passes a mend asked of a pod that is gone on to
// another pod of its gang, if it has one, a moment later: the state may
// not have seen the pod go yet, and offer it again.
func (g *Grouper) askAnotherToMend(k gang.Key) {
	g.mu.Lock()
	q := g.queue
	g.mu.Unlock()
	if p := g.State.GangMember(k); p != nil && q != nil {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		g.mends.Store(key, k)
		q.AddAfter(reconcile.Request{NamespacedName: key}, retryUnseen)
	}
}
