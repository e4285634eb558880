package soak

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// ledger follows the run's pods through a watch and keeps what the checks
// need that a list cannot show: where each pod was first bound, and which
// pods Cardinal evicted.
type ledger struct {
	mu sync.Mutex
	// boundTo is the node each pod was first seen bound to.
	boundTo map[types.UID]string
	// model is the card model each bound pod was charged for, read off its
	// node when it was first seen bound.
	model map[types.UID]string
	// evictions are Cardinal's evictions seen, in order.
	evictions []eviction
	// violations found by the watch itself.
	violations []string
	// nodeModels are the card models of each resource a node has carried,
	// for the models of bound pods. A re-slice or removal takes nothing
	// away: a pod assumed before the node was drained may still
	// bind after, and Cardinal charges it, as SPEC §1.4 says, by the node's
	// product label, which a re-slice leaves as it was.
	nodeModels map[string]map[corev1.ResourceName]string
	// targeted are pods seen marked a disruption target by Cardinal: if
	// the watch misses a deletion, its stand-in has an older state.
	targeted map[types.UID]bool
	// boundAt is when each pod was first seen bound; pending are the pods
	// seen not yet bound.
	boundAt map[types.UID]time.Time
	pending map[types.UID]bool
	// targets are the disruption targets seen, in order, and the world's
	// epoch when each was.
	targets []target
	// terminatingAt and goneAt are when each pod (ns/name) was first seen
	// terminating, and gone.
	terminatingAt, goneAt map[string]time.Time
	// rounds are the preemptions' rounds, from their Preempting events.
	rounds    []round
	roundSeen map[types.UID]bool
	changes   *changes
}

// target is a pod Cardinal marked a disruption target.
type target struct {
	pod *corev1.Pod
	why string
	at  time.Time
}

// round is one round of evictions for a preemptor (ns/name of its
// PodGroup, or of the pod), and its victims (ns/name) as its event lists
// them.
type round struct {
	preemptor string
	victims   []string
}

type eviction struct {
	pod  *corev1.Pod
	when time.Time
}

// newChecker makes the checks of w's run, with a ledger to fill.
func newChecker(w *world) *checker {
	return &checker{ledger: newLedger(&w.changes), world: w, partialSince: map[string]time.Time{}, reachedMin: map[string]bool{},
		partialGrace: partialGrace, reported: map[types.UID]bool{}, roundsReported: map[int]bool{}, overGuarantee: map[string]bool{}}
}

func newLedger(changes *changes) *ledger {
	return &ledger{boundTo: map[types.UID]string{}, model: map[types.UID]string{},
		nodeModels: map[string]map[corev1.ResourceName]string{}, targeted: map[types.UID]bool{},
		boundAt: map[types.UID]time.Time{}, pending: map[types.UID]bool{}, terminatingAt: map[string]time.Time{}, goneAt: map[string]time.Time{},
		roundSeen: map[types.UID]bool{}, changes: changes}
}

// setNode records the card models of a node's resources, added to those
// it carried before. A node removed keeps them: a pod assumed there before
// the drain may bind after it, and is charged as their model until it goes.
// Node names are not reused within a run.
func (l *ledger) setNode(name string, models map[corev1.ResourceName]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nodeModels[name] == nil {
		l.nodeModels[name] = map[corev1.ResourceName]string{}
	}
	maps.Copy(l.nodeModels[name], models)
}

// evicted tells whether Cardinal marked p a disruption target.
func evicted(p *corev1.Pod) bool {
	_, ok := evictedFor(p)
	return ok
}

// evictedFor is the message of the DisruptionTarget condition Cardinal
// set on p, if it did.
func evictedFor(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return c.Message, true
		}
	}
	return "", false
}

// seen records a pod's state from the watch.
func (l *ledger) seen(p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now, key := time.Now(), p.Namespace+"/"+p.Name
	if _, known := l.boundAt[p.UID]; !known && !l.pending[p.UID] {
		l.pending[p.UID] = true // a pod new to the run asks for more
		l.changes.note(now)
	}
	if why, ok := evictedFor(p); ok && !l.targeted[p.UID] {
		l.targeted[p.UID] = true
		l.targets = append(l.targets, target{pod: p, why: why, at: now})
	}
	if _, ok := l.terminatingAt[key]; !ok && p.DeletionTimestamp != nil {
		l.terminatingAt[key] = now
	}
	if p.Spec.NodeName == "" {
		return
	}
	if was, ok := l.boundTo[p.UID]; ok {
		if was != p.Spec.NodeName {
			l.violations = append(l.violations, fmt.Sprintf("pod %s/%s bound twice: to %s, then to %s", p.Namespace, p.Name, was, p.Spec.NodeName))
		}
		return
	}
	l.boundTo[p.UID] = p.Spec.NodeName
	l.boundAt[p.UID] = now
	for r, m := range l.nodeModels[p.Spec.NodeName] {
		if q, ok := podRequests(p)[r]; ok && !q.IsZero() {
			l.model[p.UID] = m
		}
	}
}

// gone records a pod's last state: an eviction if Cardinal marked it a
// disruption target.
func (l *ledger) gone(p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if evicted(p) || l.targeted[p.UID] {
		l.evictions = append(l.evictions, eviction{pod: p, when: time.Now()})
	} else {
		l.changes.note(time.Now()) // gone other than by an eviction
	}
	l.goneAt[p.Namespace+"/"+p.Name] = time.Now()
}

// preempting records a round of evictions from its Preempting event.
func (l *ledger) preempting(e *corev1.Event) {
	victims, ok := victimsOf(e.Message)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.roundSeen[e.UID] {
		return
	}
	l.roundSeen[e.UID] = true
	l.rounds = append(l.rounds, round{preemptor: e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name, victims: victims})
}

// snapshot is what one check reads from the API.
type snapshot struct {
	pods   []corev1.Pod
	groups map[string]*schedv1alpha1.PodGroup // ns/name
	queues map[string]*v1alpha1.Queue
}

// checker holds what checks remember between steps.
type checker struct {
	ledger *ledger
	world  *world
	// partialSince is when each gang was first seen bound below its min.
	partialSince map[string]time.Time
	// reachedMin are the gangs seen with min bound.
	reachedMin map[string]bool
	// evictionsChecked is how many of the ledger's evictions were judged.
	evictionsChecked int
	// partialGrace is how long a gang may be bound below min beyond its
	// Permit wait: time for binds, retries and evictions to land.
	partialGrace time.Duration
	checks       int
	// reported are the pods already reported bound though denied.
	reported map[types.UID]bool
	// targetsChecked is how many of the ledger's targets were judged for
	// reclaims; reclaims are those seen.
	targetsChecked int
	reclaims       []reclaim
	// roundsReported are the ledger's rounds already reported;
	// overGuarantee the queue/models whose non-preemptible use was.
	roundsReported map[int]bool
	overGuarantee  map[string]bool
}

// check runs every invariant on a snapshot and returns what it violates.
func (c *checker) check(s snapshot, now time.Time) []string {
	c.checks++
	var out []string
	out = append(out, c.quota(s)...)
	out = append(out, c.gangs(s, now)...)
	out = append(out, c.evictions(s)...)
	out = append(out, c.denied(s)...)
	out = append(out, c.nonPreemptibleUse(s)...)
	out = append(out, c.backAndForth()...)
	out = append(out, c.secondRounds(s)...)
	c.ledger.mu.Lock()
	out = append(out, c.ledger.violations...)
	c.ledger.violations = nil
	c.ledger.mu.Unlock()
	return out
}

// podRequests is a pod's request as Kubernetes counts it (sidecars and
// overhead included), as Cardinal must charge it (SPEC §4.1).
func podRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// bound tells whether a pod holds its node: bound and not finished.
func bound(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// usage recomputes each queue's use from bound pods alone: cpu in
// millicores, cards by model.
func (c *checker) usage(s snapshot) (cpu map[string]int64, cards map[string]map[string]int64) {
	cpu, cards = map[string]int64{}, map[string]map[string]int64{}
	c.ledger.mu.Lock()
	defer c.ledger.mu.Unlock()
	for i := range s.pods {
		p := &s.pods[i]
		if !bound(p) {
			continue
		}
		q := c.world.queueOf(p)
		req := podRequests(p)
		cpu[q] += req.Cpu().MilliValue()
		m, ok := c.ledger.model[p.UID]
		if !ok {
			continue
		}
		if cards[q] == nil {
			cards[q] = map[string]int64{}
		}
		for r, qty := range req {
			if r == builder.GPUResource || r == migRes {
				cards[q][m] += qty.Value()
			}
		}
	}
	return cpu, cards
}

// quota: no queue above its capability per card model and for cpu,
// counting bound pods (SPEC §3.1).
func (c *checker) quota(s snapshot) []string {
	var out []string
	cpu, cards := c.usage(s)
	for _, q := range c.world.queues {
		quotas := cardQuotas(q)
		for m, used := range cards[q.Name] {
			if quota, ok := quotas[m]; !ok && used > 0 || used > quota.capability {
				out = append(out, fmt.Sprintf("queue %s uses %d %s cards, capability %d: %s", q.Name, used, m, quotas[m].capability, c.holders(s, q.Name, m)))
			}
		}
		if capQty, ok := q.Spec.Capability[corev1.ResourceCPU]; ok && cpu[q.Name] > capQty.MilliValue() {
			out = append(out, fmt.Sprintf("queue %s uses %dm cpu, capability %s", q.Name, cpu[q.Name], capQty.String()))
		}
	}
	return out
}

// holders names the bound pods of queue charged for model.
func (c *checker) holders(s snapshot, queue, model string) string {
	c.ledger.mu.Lock()
	defer c.ledger.mu.Unlock()
	var out []string
	for i := range s.pods {
		p := &s.pods[i]
		if bound(p) && c.world.queueOf(p) == queue && c.ledger.model[p.UID] == model {
			out = append(out, p.Name+" on "+p.Spec.NodeName)
		}
	}
	return strings.Join(out, ", ")
}

// gangs: no gang bound below its min for longer than its Permit wait
// plus partialGrace (SPEC
// §2.1, §2.2, §5.3); and a gang whose min members may not be evicted
// (non- or semi-preemptible) that reached min stays there until the run
// deletes it (SPEC §5.2).
func (c *checker) gangs(s snapshot, now time.Time) []string {
	var out []string
	boundOf := map[string]int{}
	for i := range s.pods {
		p := &s.pods[i]
		if g, ok := p.Labels[schedv1alpha1.PodGroupLabel]; ok && bound(p) && p.DeletionTimestamp == nil {
			boundOf[p.Namespace+"/"+g]++
		}
	}
	for _, wl := range c.world.liveWork("gang") {
		k := wl.ns + "/" + wl.name
		b := boundOf[k]
		if b >= wl.min {
			c.reachedMin[k] = true
		}
		if b < wl.lowestMin() && wl.preempt != v1alpha1.Preemptible && c.reachedMin[k] {
			// All of it gone counts too: the run deletes no live gang's bound pods.
			out = append(out, fmt.Sprintf("%s gang %s fell to %d bound, below its min of %d", wl.preempt, k, b, wl.min))
		}
		if b == 0 || b >= wl.min {
			delete(c.partialSince, k)
			continue
		}
		since, ok := c.partialSince[k]
		if !ok {
			c.partialSince[k] = now
			continue
		}
		if now.Sub(since) > permitWaitOf(wl)+c.partialGrace {
			out = append(out, fmt.Sprintf("gang %s has been bound below its min (%d of %d) for %s", k, b, wl.min, now.Sub(since).Round(time.Second)))
			delete(c.partialSince, k) // said once
		}
	}
	return out
}

// lowestMin is the lowest minMember the gang has had.
func (wl *workload) lowestMin() int {
	if wl.minLow > 0 {
		return wl.minLow
	}
	return wl.min
}

// permitWaitOf is how long a gang's members wait at Permit: its PodGroup's
// scheduleTimeoutSeconds if shorter than the configuration's wait.
func permitWaitOf(wl *workload) time.Duration {
	if wl.timeout > 0 && wl.timeout < permitWait {
		return wl.timeout
	}
	return permitWait
}

// evictions: Cardinal evicted no non-preemptible pod (SPEC §5.2; that a
// semi-preemptible gang keeps its min is checked by gangs).
func (c *checker) evictions(s snapshot) []string {
	c.ledger.mu.Lock()
	evs := c.ledger.evictions[c.evictionsChecked:]
	c.evictionsChecked = len(c.ledger.evictions)
	c.ledger.mu.Unlock()
	var out []string
	for _, e := range evs {
		wl := c.world.owner(e.pod)
		if wl == nil {
			continue
		}
		// A stale gang given back (SPEC §2.6) is judged by gangs.
		if why, _ := evictedFor(e.pod); !preemption(why) && why != "" {
			continue
		}
		if c.classOf(e.pod, wl) == v1alpha1.NonPreemptible {
			out = append(out, fmt.Sprintf("non-preemptible pod %s/%s (%s %s) was evicted", e.pod.Namespace, e.pod.Name, wl.kind, wl.name))
		}
	}
	return out
}

// queueOf is the queue a pod is charged to: its workload's.
func (w *world) queueOf(p *corev1.Pod) string {
	if wl := w.owner(p); wl != nil && wl.queue != "" {
		return wl.queue
	}
	return p.Namespace
}

// owner is the workload a pod belongs to.
func (w *world) owner(p *corev1.Pod) *workload {
	if g, ok := p.Labels[schedv1alpha1.PodGroupLabel]; ok {
		return w.work[p.Namespace+"/"+g]
	}
	if a, ok := p.Labels["app"]; ok {
		return w.work[p.Namespace+"/"+a]
	}
	return w.work[p.Namespace+"/"+p.Name]
}

func resourceQty(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
