package state

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/pkg/gang"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
	"cardinal.dev/cardinal/pkg/requeue"
	"cardinal.dev/cardinal/pkg/workload"
)

// kubeAccess is how the state reaches the cluster, set once by Attach.
type kubeAccess struct {
	config *rest.Config
	owners workload.Owners
	pods   corelisters.PodLister
	// ensureDefaultQueue creates the default queue if it is missing.
	ensureDefaultQueue func()
}

// tickEvery is how often the backstop (tick) runs.
const tickEvery = 2 * time.Second

// Attach connects the state to the scheduler the first time a Cardinal
// plugin is built: it feeds the state from the scheduler's informers (pods,
// nodes, namespaces, top-level owners) and its own PodGroup and Queue
// informers, creates the default queue when missing, and starts the
// goroutine that acts on the scheduling queue for it. Later calls return
// the first call's result.
func (s *State) Attach(ctx context.Context, h fwk.Handle) error {
	s.attachOnce.Do(func() { s.attachErr = s.attach(ctx, h) })
	return s.attachErr
}

func (s *State) attach(ctx context.Context, h fwk.Handle) error {
	if name := s.settings.SchedulerName; h.ProfileName() != name {
		return fmt.Errorf("Cardinal's plugins are configured for profile %s and cannot also run in profile %s: enable them in one profile only", name, h.ProfileName())
	}
	// Custom resources have no protobuf encoding: their clients speak JSON.
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	kube := h.SharedInformerFactory()
	s.kube = kubeAccess{
		config: cfg,
		pods:   kube.Core().V1().Pods().Lister(),
		owners: workload.Owners{
			ReplicaSets:  kube.Apps().V1().ReplicaSets().Lister(),
			Deployments:  kube.Apps().V1().Deployments().Lister(),
			StatefulSets: kube.Apps().V1().StatefulSets().Lister(),
			DaemonSets:   kube.Apps().V1().DaemonSets().Lister(),
			Jobs:         kube.Batch().V1().Jobs().Lister(),
			CronJobs:     kube.Batch().V1().CronJobs().Lister(),
		},
	}
	cc, err := cardinalclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pgc, err := pgclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if !s.settings.ReadOnly {
		// Without the Queue CRD or the right to it, the default queue is
		// created once Queues can be read (apis.go).
		s.kube.ensureDefaultQueue = func() {
			if err := ensureQueue(ctx, cc, s.settings.DefaultQueue); err != nil {
				klog.FromContext(ctx).Error(err, "Creating the default queue", "queue", s.settings.DefaultQueue)
			}
		}
		if err := ensureQueue(ctx, cc, s.settings.DefaultQueue); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			// A kube-apiserver restarting or slow to answer must not stop
			// the scheduler from starting: it tries again meanwhile.
			klog.FromContext(ctx).Error(err, "Creating the default queue; trying again in the background", "queue", s.settings.DefaultQueue)
			go s.retryDefaultQueue(ctx, cc)
		}
	}
	// PodGroups, Queues and namespaces before pods: a pod's queue is read
	// from them. The scheduler starts its own informers (pods, nodes,
	// namespaces) after the plugins are built; ours start here.
	pgFactory := PodGroupInformers(pgc)
	queueFactory := QueueInformers(cc)
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
		api      string // set for the APIs the scheduler can do without
	}{
		{pgFactory.Scheduling().V1alpha1().PodGroups().Informer(), eventhandler.For(nil, s.OnPodGroup, s.OnPodGroupGone), podGroupsAPI},
		{queueFactory.Scheduling().V1alpha1().Queues().Informer(), eventhandler.For(nil, s.OnQueue, s.OnQueueGone), queuesAPI},
		{kube.Core().V1().Namespaces().Informer(), eventhandler.For(nil, s.OnNamespace, s.onNamespaceGone), ""},
		{kube.Core().V1().Nodes().Informer(), eventhandler.For(nil, s.OnNode, s.OnNodeGone), ""},
		{kube.Core().V1().Pods().Informer(), eventhandler.For(nil, s.OnPod, s.OnPodDeleted), ""},
		// Top-level owners whose label sets their pods' preemptibility.
		{kube.Apps().V1().ReplicaSets().Informer(), s.ownerHandler(), ""},
		{kube.Apps().V1().Deployments().Informer(), s.ownerHandler(), ""},
		{kube.Apps().V1().StatefulSets().Informer(), s.ownerHandler(), ""},
		{kube.Apps().V1().DaemonSets().Informer(), s.ownerHandler(), ""},
		{kube.Batch().V1().Jobs().Informer(), s.ownerHandler(), ""},
		{kube.Batch().V1().CronJobs().Informer(), s.ownerHandler(), ""},
	}
	sources := make([]source, 0, len(handlers))
	for _, hd := range handlers {
		if hd.api != "" {
			if err := s.watchMissing(ctx, hd.api, hd.informer); err != nil {
				return err
			}
		}
		reg, err := hd.informer.AddEventHandler(hd.handler)
		if err != nil {
			return err
		}
		sources = append(sources, source{api: hd.api, synced: reg.HasSynced})
	}
	s.mu.Lock()
	s.sources = sources
	s.mu.Unlock()
	pgFactory.Start(ctx.Done())
	queueFactory.Start(ctx.Done())
	s.attached.Store(true)
	var fw Framework = h
	if s.settings.ReadOnly {
		fw = discard{}
	}
	go s.runOutbox(ctx, fw)
	started := time.Now()
	go func() {
		// Pods turned away before the state synced are woken as soon as it has.
		if s.WaitForSync(ctx) == nil {
			s.mu.RLock()
			pods, nodes := len(s.pods), len(s.nodes)
			s.mu.RUnlock()
			klog.FromContext(ctx).Info("Cardinal's state synced", "pods", pods, "nodes", nodes, "after", time.Since(started))
			s.tick()
		}
		wait.Until(s.tick, tickEvery, ctx.Done())
	}()
	return nil
}

// KubeConfig is the scheduler's client configuration (JSON, for custom
// resources), once Attach has run; the status writers use it.
func (s *State) KubeConfig() *rest.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.kube.config
}

// Attached tells whether a Cardinal plugin has attached the state.
func (s *State) Attached() bool { return s.attached.Load() }

// ensurePodLocked returns a pod's entry, recording the pod first if the
// state has not seen it yet: the scheduler's own informer handler can run
// before the state's. A pod the informer no longer has was deleted (and
// its delete already delivered, or about to be): it gets an entry to be
// judged by, which is not recorded, so it cannot come back as a ghost.
func (s *State) ensurePodLocked(pod *corev1.Pod) (e *podEntry, recorded bool) {
	if e := s.pods[pod.UID]; e != nil {
		return e, true
	}
	owner := func() map[string]string { return s.kube.owners.Labels(pod) }
	if s.kube.pods != nil {
		if cur, err := s.kube.pods.Pods(pod.Namespace).Get(pod.Name); err != nil || cur.UID != pod.UID {
			e := &podEntry{pod: pod, owner: owner()}
			e.Facts = s.factsLocked(pod, e.owner)
			return e, false
		}
	}
	return s.upsertPodLocked(pod, owner), true
}

// OnPod records a pod added or updated, as the pod informer delivers it:
// a pod of Cardinal's profile is recorded and charged; a pod of another
// scheduler that joins a gang is remembered against that gang.
func (s *State) OnPod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName != s.settings.SchedulerName {
		_, inGang := gang.Of(pod)
		s.mu.RLock()
		_, known := s.foreign[pod.UID]
		s.mu.RUnlock()
		if inGang || known {
			s.mu.Lock()
			s.upsertForeignLocked(pod)
			s.mu.Unlock()
		}
		return
	}
	if pod.DeletionTimestamp != nil && pod.Spec.NodeName != "" && !finished(pod) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.terminatingLocked(pod, func() map[string]string { return s.kube.owners.Labels(pod) })
		return
	}
	if isTerminal(pod) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if finished(pod) {
			s.victimGoneLocked(pod.UID) // finished: its node is free
		}
		s.podGoneLocked(pod)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	owner := func() map[string]string { return s.kube.owners.Labels(pod) }
	s.upsertPodLocked(pod, owner)
	s.renominatedLocked(pod)
}

// OnPodDeleted forgets a deleted pod; a victim of a preemption under way is
// gone for good, so its room is free for the preemptor.
func (s *State) OnPodDeleted(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.victimGoneLocked(pod.UID)
	s.claimDoneLocked(pod.UID)
	s.podGoneLocked(pod)
}

// podGoneLocked forgets a deleted or finished pod. A gang that loses
// members below its min while others wait at Permit cannot complete: they
// give back their nodes at once, without a backoff (the gang waits for
// members).
func (s *State) podGoneLocked(pod *corev1.Pod) {
	if pod.Spec.SchedulerName != s.settings.SchedulerName {
		s.removeForeignLocked(pod)
		return
	}
	e := s.pods[pod.UID]
	if e == nil {
		return
	}
	s.removePodLocked(pod.UID)
	if e.terminating {
		return // it left its gang when its deletion began
	}
	if g := s.gangs[e.Gang]; g != nil && g.group != nil && len(g.members) < g.min() {
		// A member past its PreFilter but not yet reserved must not reserve
		// either: failLocked ends the attempt it joined.
		s.failLocked(g, fmt.Sprintf("it has %d of its minMember %d pods left", len(g.members), g.min()), false)
	}
}

// OnPodGroup records a PodGroup added or updated. Its labels give its
// members their queue and preemptibility; a changed minMember gives its
// placed pods their roles anew, lets members waiting at Permit bind when a
// lowered min is met, and makes them give back their nodes when a raised
// min cannot be.
func (s *State) OnPodGroup(pg *schedv1alpha1.PodGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gangLocked(gang.KeyOf(pg))
	old := g.group
	g.group = pg
	if old == nil || old.UID != pg.UID {
		// A PodGroup created anew waits since its creation, and is
		// narrowed anew (narrow.go).
		g.minBound, g.waitSince, g.narrowMissed = "", time.Time{}, false
	}
	s.gangCreated.LoadOrStore(g.key, pg.CreationTimestamp.Time)
	if old == nil || !maps.Equal(old.Labels, pg.Labels) {
		s.rederiveGangFactsLocked(g)
	}
	if old != nil && len(g.held) > 0 {
		if c, err := requeue.Of(old, pg); err == nil && c.PodGroupAdmission() {
			// What holds the gang may have been mended (its card request, min or queue).
			s.wakePendingLocked(g)
		}
	}
	if old == nil || old.Spec.MinMember != pg.Spec.MinMember {
		s.setRolesLocked(g)
		if g.reserved > 0 && !g.needsMin() {
			// A lowered min is met: the members waiting at Permit bind now.
			s.allowLocked(allowReservedLocked(g))
		} else if g.reserved > 0 && len(g.members) < g.min() {
			s.failLocked(g, fmt.Sprintf("its minMember was raised to %d and it has %d pods", g.min(), len(g.members)), false)
		}
	}
	s.refreshGangLocked(g)
}

// OnPodGroupGone: the gang's pods count on their own until the PodGroup is
// back; members waiting at Permit give back their nodes (none binds alone).
func (s *State) OnPodGroupGone(pg *schedv1alpha1.PodGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gangs[gang.KeyOf(pg)]
	if g == nil {
		return
	}
	if g.reserved > 0 {
		s.failLocked(g, "its PodGroup was deleted", false)
	}
	g.group = nil
	s.rederiveGangFactsLocked(g)
	s.setRolesLocked(g)
	s.refreshGangLocked(g)
}

// rederiveGangFactsLocked derives a gang's members' facts anew (their queue and
// preemptibility come from its PodGroup's labels).
func (s *State) rederiveGangFactsLocked(g *gangEntry) {
	for _, e := range g.members {
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

// OnQueue records a Queue added or updated; a Queue whose
// volcano.sh/card.quota cannot be read gets an event, once per problem.
func (s *State) OnQueue(q *v1alpha1.Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.upsertQueueLocked(q)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	s.reportLocked(queueRef(q), "InvalidCardQuota", "Admission", msg)
	s.reportRenamedModelsLocked(q)
}

// OnQueueGone forgets a Queue's spec; what its pods use is kept.
func (s *State) OnQueueGone(q *v1alpha1.Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteQueueLocked(q.Name)
	s.forgetReportsLocked("Queue", q.Name, "InvalidCardQuota", "RenamedCardModel", "InvalidNamespaceSelector")
}

func queueRef(q *v1alpha1.Queue) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Queue", Name: q.Name, UID: q.UID}
}

// reportRenamedModelsLocked warns, on the Queue, about each card model it
// lists under the name Cardinal gave MPS shares before SPEC §1.4 said how to
// name them: pods on those cards are charged under the new name, so quota
// kept under the old one is never used until the Queue is edited.
func (s *State) reportRenamedModelsLocked(q *v1alpha1.Queue) {
	var renamed []string
	if e := s.queues[q.Name]; e != nil && len(s.renamedModels) > 0 {
		for model, c := range e.cards {
			// A former name that some node carries as its model now is
			// that model, not a stale name.
			if now, ok := s.renamedModels[model]; ok && c.Listed && s.cardCapacity[model] == 0 {
				renamed = append(renamed, fmt.Sprintf("%s is now named %s", model, now))
			}
		}
	}
	msg := ""
	if len(renamed) > 0 {
		slices.Sort(renamed)
		msg = fmt.Sprintf("queue %s lists card models under former names, so their quota is not used: %s (MPS shares are named after the whole card's memory in GiB); rename them in spec.cards",
			q.Name, strings.Join(renamed, "; "))
	}
	s.reportLocked(queueRef(q), "RenamedCardModel", "Admission", msg)
}

// OnNamespace re-derives the facts of a namespace's pods when its labels
// change (a pod seen before its namespace, or a namespace moved to another
// queue).
func (s *State) OnNamespace(ns *corev1.Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.namespaces[ns.Name]; ok && maps.Equal(old, ns.Labels) {
		return
	}
	s.namespaces[ns.Name] = ns.Labels
	for _, e := range s.inNamespace[ns.Name] {
		s.setFactsLocked(e, s.factsLocked(e.pod, e.owner))
	}
}

func (s *State) onNamespaceGone(ns *corev1.Namespace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.namespaces, ns.Name)
}

// OnNode records a node's card models and tells an operator, through an
// event, when its GPUs carry no product label (SPEC §1.4).
func (s *State) OnNode(node *corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	detected, changed := s.upsertNodeLocked(node)
	if !changed {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	s.reportLocked(ref, "UnlabelledCards", "CardModel", unlabelledMessage(node.Name, detected.Unlabelled))
	for _, c := range detected.Cards {
		if c.Former == "" || s.renamedModels[c.Former] == c.Model {
			continue
		}
		s.renamedModels[c.Former] = c.Model
		for _, q := range s.queues {
			if q.spec != nil && q.cards[c.Former] != nil {
				s.reportRenamedModelsLocked(q.spec)
			}
		}
	}
}

// OnNodeGone forgets a node; pods still on it keep their charge.
func (s *State) OnNodeGone(node *corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteNodeLocked(node.Name)
	s.forgetReportsLocked("Node", node.Name, "UnlabelledCards")
}
