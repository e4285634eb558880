package grouper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

// ownerIndex indexes Cardinal's PodGroups by the UID of the workload they
// are made for.
const ownerIndex = "cardinal.dev/grouped-for"

// retryUnseen is how soon a pod whose owner, or whose own entry in the
// scheduling state, has not arrived yet is tried again.
const (
	retryUnseen    = 250 * time.Millisecond
	maxRetryUnseen = time.Minute
)

// whilePodGroupsUnreadable is how often a pod the grouper would group is
// looked at again while PodGroups cannot be read.
const whilePodGroupsUnreadable = 10 * time.Second

// Grouper makes the PodGroups of the workloads Cardinal groups and labels
// their pods into them (SPEC §7).
type Grouper struct {
	// State is the scheduling state that holds the pods until the grouper
	// rules on them.
	State *state.State
	// Kinds are the kinds grouped; SchedulerName the profile whose pods are.
	Kinds         workload.Kinds
	SchedulerName string

	client client.Client
	live   client.Reader
	// podGroups are the state's PodGroup informer's (state.PodGroupInformer),
	// indexed by ownerIndex too.
	podGroups cache.Indexer
	unseen    retries
	grouping  grouping
	recorder  events.EventRecorder
	reader    *reader
	pods      corelisters.PodLister
	// mends are the pods whose reconcile was asked to mend their PodGroup
	// (askToMend): types.NamespacedName -> gang.Key.
	mends sync.Map
	// queue is the workqueue of the running controller, for a mend passed
	// on from a pod that is gone (askAnotherToMend).
	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// SetupWithManager registers the grouper with mgr: it reconciles a pod
// when the pod is added or changed, and, for a workload that changes (a
// Job's completions, a JobSet's Jobs, an annotation), one pod of each
// PodGroup made for it.
func (g *Grouper) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	cfg := g.State.KubeConfig()
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
	f := g.State.KubeInformers()
	g.client, g.live = mgr.GetClient(), mgr.GetAPIReader()
	g.recorder = mgr.GetEventRecorder("cardinal-scheduler")
	g.reader = newReader(f, kube, dyn, d, g.Kinds)
	g.pods = f.Core().V1().Pods().Lister()
	pgInformer := g.State.PodGroupInformer()
	if _, ok := pgInformer.GetIndexer().GetIndexers()[ownerIndex]; !ok {
		if err := pgInformer.AddIndexers(cache.Indexers{ownerIndex: madeFor}); err != nil {
			return err
		}
	}
	g.podGroups = pgInformer.GetIndexer()
	return ctrl.NewControllerManagedBy(mgr).
		Named("grouper").
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			g.mu.Lock()
			g.queue = q
			g.mu.Unlock()
			// Ruled on once the PodGroups are read: a reconcile that
			// read none would take a PodGroup for gone.
			if !cache.WaitForCacheSync(ctx.Done(), pgInformer.HasSynced) {
				return ctx.Err()
			}
			return g.watch(ctx, f.Core().V1().Pods().Informer(), pgInformer, []cacheInformer{
				f.Batch().V1().Jobs().Informer(), f.Apps().V1().ReplicaSets().Informer(),
				f.Apps().V1().StatefulSets().Informer(), f.Apps().V1().Deployments().Informer(),
			}, q)
		})).
		Complete(g)
}

// madeFor indexes a PodGroup the grouper made by namespace and the UID of
// its owner (ownerKey). The grouper names one owner; only the first few
// of a PodGroup that names more are read.
func madeFor(obj any) ([]string, error) {
	pg, ok := obj.(*schedv1alpha1.PodGroup)
	if !ok || pg.Annotations[v1alpha1.GroupedByAnnotation] == "" {
		return nil, nil
	}
	refs := pg.OwnerReferences[:min(len(pg.OwnerReferences), maxIndexedOwners)]
	keys := make([]string, 0, len(refs))
	for _, ref := range refs {
		keys = append(keys, ownerKey(pg.Namespace, ref.UID))
	}
	return keys, nil
}

// maxIndexedOwners bounds the owners of one PodGroup indexed.
const maxIndexedOwners = 4

func ownerKey(namespace string, uid types.UID) string { return namespace + "/" + string(uid) }

// podGroup reads a PodGroup from the state's informer: the informer's own
// copy, not to be changed.
func (g *Grouper) podGroup(namespace, name string) (*schedv1alpha1.PodGroup, error) {
	obj, ok, err := g.podGroups.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(schedv1alpha1.Resource("podgroups"), name)
	}
	pg, ok := obj.(*schedv1alpha1.PodGroup)
	if !ok {
		return nil, fmt.Errorf("PodGroup %s/%s: want *v1alpha1.PodGroup, got %T", namespace, name, obj)
	}
	return pg, nil
}

// Reconcile groups one pod the grouper may group and has not ruled on, or,
// for a pod it grouped, mends its PodGroup from its workload as it is now.
func (g *Grouper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	asked, mend := g.mends.LoadAndDelete(req.NamespacedName)
	pod, err := g.pods.Pods(req.Namespace).Get(req.Name)
	if err != nil {
		if k, ok := asked.(gang.Key); mend && ok {
			g.askAnotherToMend(k)
		}
		return reconcile.Result{}, nil // gone
	}
	if g.State.AwaitsGrouping(pod) {
		return g.groupOnce(ctx, req, pod)
	}
	if unlabelledBound(pod) && pod.Spec.SchedulerName == g.SchedulerName {
		if err := g.labelBound(ctx, pod); err != nil || !mend {
			if mend {
				g.mends.Store(req.NamespacedName, asked) // asked again with the retry
			}
			return reconcile.Result{}, err
		}
		// Labelled; the mend asked of it is made below.
	}
	if k, ok := g.State.GangOf(pod); ok && !k.Native() && pod.Spec.SchedulerName == g.SchedulerName {
		if !mend {
			return reconcile.Result{}, nil
		}
		_, name := k.Split()
		res, err := g.mend(ctx, pod, name)
		if errors.Is(err, errRuleAgain) {
			return g.group(ctx, pod)
		}
		if err != nil || res.RequeueAfter > 0 {
			g.mends.Store(req.NamespacedName, k) // asked again
		}
		return res, err
	}
	if g.Kinds.Groupable(pod, g.SchedulerName) && g.State.PodGroupsUnreadable() {
		// Scheduled as before while PodGroups cannot be read; once they
		// can, the pod waits for a ruling again, and gets one.
		return reconcile.Result{RequeueAfter: whilePodGroupsUnreadable}, nil
	}
	return reconcile.Result{}, nil
}

// groupOnce rules on pod and its siblings (group) unless a reconcile of
// one of them is doing so; pod is then asked for again once that one is
// done, and finds itself ruled on, or is ruled on by its own reconcile.
func (g *Grouper) groupOnce(ctx context.Context, req reconcile.Request, pod *corev1.Pod) (reconcile.Result, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return g.group(ctx, pod) // no siblings
	}
	// Keyed by namespace too: controller UIDs are not secret, and a pod
	// in another namespace naming this one's must not hold its rulings.
	key := ownerKey(pod.Namespace, ref.UID)
	if !g.grouping.start(key, req) {
		return reconcile.Result{}, nil
	}
	defer func() {
		waiting := g.grouping.done(key)
		g.mu.Lock()
		q := g.queue
		g.mu.Unlock()
		for _, r := range waiting {
			if q != nil {
				q.Add(r)
			}
		}
	}()
	return g.group(ctx, pod)
}

// group rules on a pod and on the other pods of its controller that await
// a ruling: makes their PodGroup and labels them into it, or finds them
// gangs of one. A workload's pods are ruled on together, so that its gang
// becomes whole at once, in the order its PodGroup was made, rather than
// pod by pod among other gangs' pods.
func (g *Grouper) group(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	pods := g.siblings(pod)
	chain, err := Walk(g.reader, pod)
	if !errors.Is(err, ErrOwnerUnseen) {
		g.unseen.forget(pod.UID)
	}
	var unreadable *Unreadable
	switch {
	case errors.As(err, &unreadable):
		g.warn(pod, nil, ReasonOwnerUnreadable, fmt.Sprintf("Cardinal cannot tell whether pod %s belongs to a gang, and schedules it alone: %v", pod.Name, unreadable))
		return g.ungroup(pod, pods)
	case errors.Is(err, ErrOwnerUnseen):
		// Most often an owner made a moment before the pod, not yet in
		// the cache (or of a kind whose informer is still listing, just
		// after a start); an owner that never comes (the pod orphaned)
		// is asked after less and less often.
		after := g.unseen.next(pod.UID)
		if errors.Is(err, errNotYet) {
			// Its kind is still being listed (after a start, or a CRD
			// just installed): soon read, so asked again soon.
			after = min(after, time.Second)
		}
		logger.V(4).Info("An owner of the pod is not known yet; trying again", "err", err, "after", after)
		return reconcile.Result{RequeueAfter: after}, nil
	case err != nil:
		g.warn(pod, nil, ReasonOwnerUnreadable, fmt.Sprintf("Cardinal cannot read the owners of pod %s, and schedules it alone: %v", pod.Name, err))
		return g.ungroup(pod, pods)
	}
	plan, problems := PlanFor(chain, g.Kinds, g.reader.jobsOf)
	for _, p := range problems {
		g.warn(p.On, pod, p.Reason, p.Message)
	}
	if plan == nil {
		return g.ungroup(pod, pods)
	}
	// A LeaderWorkerSet's leader StatefulSet controls the leaders of
	// every group: only those of this pod's group are in its gang.
	pods = slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return p.Labels[lwsGroupLabel] != plan.Unit.Group && plan.Unit.Group != "" })
	if g.State.PlacedAloneUnder(pod) {
		g.info(plan.Unit.Obj, ReasonStartedAlone, fmt.Sprintf(
			"%s %s asks for a gang, but pods of it already run as pods of their own: its new pods run alone too, and its pods make a gang once none of them runs alone",
			plan.Unit.Kind.Kind, plan.Unit.Obj.GetName()))
		return g.ungroup(pod, pods)
	}
	made, err := g.ensure(ctx, pod, plan)
	if permanent(err) {
		msg := fmt.Sprintf("Cardinal could not make PodGroup %s for %s %s, and schedules its pods alone: %v", plan.Name, plan.Unit.Kind.Kind, plan.Unit.Obj.GetName(), err)
		g.warn(plan.Unit.Obj, pod, ReasonPodGroupNotMade, msg)
		g.warn(pod, nil, ReasonPodGroupNotMade, msg)
		return g.ungroup(pod, pods)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if !made {
		return g.ungroup(pod, pods)
	}
	// The pods join the gang in the scheduling state at once; no API write
	// is made per pod until each binds (its Binding writes its gang).
	unrecorded := g.State.Grouped(pods, gang.Key(pod.Namespace+"/"+plan.Name))
	logger.V(2).Info("Grouped pods into their workload's PodGroup", "podGroup", plan.Name, "pods", len(pods)-len(unrecorded), "minMember", plan.Min, "minFrom", plan.MinFrom)
	if slices.Contains(unrecorded, pod) {
		return reconcile.Result{RequeueAfter: retryUnseen}, nil
	}
	return reconcile.Result{}, nil
}

// siblings are pod and the other pods of its controller that await a
// ruling.
func (g *Grouper) siblings(pod *corev1.Pod) []*corev1.Pod {
	pods := []*corev1.Pod{pod}
	for _, p := range g.State.AwaitingGroupingUnder(pod) {
		if p.UID != pod.UID {
			pods = append(pods, p)
		}
	}
	return pods
}

// ungroup records that pods are gangs of one. If pod, the one asked
// about, is not recorded in the state yet, it is tried again, so the
// ruling is not lost; the others each come with an event of their own.
func (g *Grouper) ungroup(pod *corev1.Pod, pods []*corev1.Pod) (reconcile.Result, error) {
	retry := false
	for _, p := range pods {
		if !g.State.Ungrouped(p) && p.UID == pod.UID {
			retry = true
		}
	}
	if retry {
		return reconcile.Result{RequeueAfter: retryUnseen}, nil
	}
	return reconcile.Result{}, nil
}

// ensure makes or mends the PodGroup plan asks for; false when a PodGroup
// of its name is someone else's (PodGroupNameConflict).
func (g *Grouper) ensure(ctx context.Context, pod *corev1.Pod, plan *Plan) (bool, error) {
	want := PodGroupFor(plan, pod.Namespace)
	key := client.ObjectKeyFromObject(want)
	get := func() (*schedv1alpha1.PodGroup, error) {
		pg, err := g.podGroup(key.Namespace, key.Name)
		return pg.DeepCopy(), err
	}
	for range 3 {
		have, err := get()
		if apierrors.IsNotFound(err) {
			have = nil
		} else if err != nil {
			return false, err
		}
		action, err := Decide(have, want, g.ownerLives(pod.Namespace))
		if err != nil {
			return false, err // asked again, once the owner can be read
		}
		switch action {
		case Keep:
			return true, nil
		case Create:
			err = g.client.Create(ctx, want.DeepCopy())
		case Update:
			err = g.client.Patch(ctx, Mended(have, want), client.MergeFrom(have))
		case Replace:
			err = g.client.Delete(ctx, have, client.Preconditions{UID: &have.UID})
			if err == nil || apierrors.IsNotFound(err) {
				err = g.client.Create(ctx, want.DeepCopy())
			}
		case Conflict:
			msg := fmt.Sprintf("PodGroup %s exists and was not made by Cardinal for %s %s: it is left alone, and the pods are scheduled as gangs of one; rename or delete that PodGroup, or label the pods %s=%s to join it",
				want.Name, plan.Unit.Kind.Kind, plan.Unit.Obj.GetName(), schedv1alpha1.PodGroupLabel, want.Name)
			g.warn(plan.Unit.Obj, pod, ReasonPodGroupNameConflict, msg)
			g.warn(pod, nil, ReasonPodGroupNameConflict, msg)
			return false, nil
		}
		if err == nil {
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return false, err
		}
		// Made or changed meanwhile (another pod of the gang, before the
		// informer saw it): read it from the API server and decide again.
		get = func() (*schedv1alpha1.PodGroup, error) {
			pg := &schedv1alpha1.PodGroup{}
			return pg, g.live.Get(ctx, key, pg)
		}
	}
	return false, fmt.Errorf("PodGroup %s/%s kept changing while Cardinal made it", want.Namespace, want.Name)
}

// info records a normal event on obj.
func (g *Grouper) info(obj runtime.Object, reason, msg string) {
	g.recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Grouping", "%s", msg)
}

// permanent tells whether making a PodGroup failed for a reason trying
// again will not mend: the RBAC to make it, its CRD, a ResourceQuota, an
// admission policy refusing it.
func permanent(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err) || apierrors.IsNotFound(err))
}

// warn records a warning event on obj (a workload, or a pod), with
// related when set.
func (g *Grouper) warn(obj runtime.Object, related runtime.Object, reason, msg string) {
	if obj == nil || isNilPod(obj) {
		return
	}
	if related != nil && isNilPod(related) {
		related = nil
	}
	g.recorder.Eventf(obj, related, corev1.EventTypeWarning, reason, "Grouping", "%s", msg)
}

func isNilPod(obj runtime.Object) bool {
	p, ok := obj.(*corev1.Pod)
	return ok && p == nil
}
