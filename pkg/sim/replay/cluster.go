package replay

import (
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/pkg/sim/record"
	"cardinal.dev/cardinal/pkg/sim/trace"
)

// partialGrace is how long a gang may have some but fewer than min pods
// running before it counts as partial: longer than binding a gang takes.
const partialGrace = 3 * time.Second

// moveWindow is how soon after an eviction a bind on the same node counts
// as the capacity going to the pod bound: a gang that evicted for room binds
// as soon as its victims are gone.
const moveWindow = 5 * time.Second

// cluster is the simulator's view of one replay: the trace's jobs and their
// pods as the pod informer reports them, the nodes, and what the simulated
// kubelet decided. Everything is under mu; API calls happen outside it, in
// the kubelet's workers.
type cluster struct {
	mu sync.Mutex
	// k is trace seconds per wall second; start is trace time 0.
	k     float64
	start time.Time
	now   func() time.Time

	nodes  map[string]*simNode
	jobs   map[string]*jobState // by namespace/name
	pods   map[types.UID]*podState
	queues []trace.Queue

	// evicted is node -> the last eviction from it, for moves.
	evicted map[string]eviction
	moves   []record.Move
	// lags are wall seconds from submit to a job's first pod seen.
	lags []float64
	// progress is when a pod last bound, completed or stopped.
	progress time.Time

	catalog *catalog
	cfg     *rest.Config
	kubelet *kubelet
	timers  *timers
}

type simNode struct {
	name   string
	group  trace.NodeGroup
	detect cardmodel.Node
}

type eviction struct {
	queue, model string
	at           time.Time
}

// jobState is one trace job under replay.
type jobState struct {
	spec trace.Job
	// obj is the Job once created; attempts is each index's latest try.
	obj      *batchv1.Job
	attempts map[int]int
	queue    string
	shape    podShape
	submit   time.Time // wall
	seen     bool
	live     map[types.UID]*podState

	running, succeeded int
	up                 bool // min pods running or done: its pods work
	minBound, done     time.Time

	evicted, killed int
	lostCardSeconds float64 // trace seconds × whole cards
	alternatives    int
	firstChoice     int

	partialSince time.Time
	partialTotal time.Duration
	partialEver  bool
	// killing is set while a kill is taken in; partialByKill marks a
	// partial spell a kill began: the cluster broke the gang, not the
	// scheduler, and it does not count.
	killing, partialByKill bool
}

// podState is one pod of a job.
type podState struct {
	uid       types.UID
	namespace string
	name      string
	index     int
	job       *jobState
	node      string
	model     string
	cards     int64
	// started is whether its work runs (its gang is up); workFrom when it
	// began, gen tells a timer for an earlier start from the current one.
	started  bool
	workFrom time.Time
	gen      int
	done     bool
	// stopped is set once it was evicted or killed; killed when the sim
	// stopped it (a node removed or re-sliced).
	stopped, killed bool
}

// traceSeconds is the trace time of a wall instant.
func (c *cluster) traceSeconds(t time.Time) float64 {
	if t.IsZero() {
		return -1
	}
	return t.Sub(c.start).Seconds() * c.k
}

// onPod takes in a pod as the informer reports it.
func (c *cluster) onPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	job := c.jobs[pod.Namespace+"/"+pod.Labels[jobLabel]]
	if job == nil {
		return
	}
	now := c.now()
	ps := c.pods[pod.UID]
	if ps == nil {
		index, _ := strconv.Atoi(pod.Labels[indexLabel])
		ps = &podState{uid: pod.UID, namespace: pod.Namespace, name: pod.Name, index: index, job: job}
		c.pods[pod.UID] = ps
		job.live[pod.UID] = ps
		if !job.seen {
			job.seen = true
			c.lags = append(c.lags, now.Sub(job.submit).Seconds())
		}
	}
	if pod.DeletionTimestamp != nil {
		if !ps.stopped {
			c.stopLocked(ps, now)
		}
		c.kubelet.do(action{kind: finish, pod: ref(pod)})
		return
	}
	if pod.Spec.NodeName != "" && ps.node == "" && !ps.stopped && !ps.done {
		c.bindLocked(ps, pod, now)
	}
}

// onDelete forgets a pod that is gone.
func (c *cluster) onDelete(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pods[pod.UID]
	if ps == nil {
		return
	}
	if !ps.stopped && !ps.done {
		c.stopLocked(ps, c.now())
	}
	delete(c.pods, pod.UID)
	delete(ps.job.live, pod.UID)
}

// bindLocked records a pod bound to its node.
func (c *cluster) bindLocked(ps *podState, pod *corev1.Pod, now time.Time) {
	job := ps.job
	ps.node = pod.Spec.NodeName
	if n := c.nodes[ps.node]; n != nil {
		for m, k := range n.detect.PodCards(pod) {
			ps.model, ps.cards = m, k
		}
		if names := job.shape.products; len(names) > 1 {
			job.alternatives++
			if n.group.Model == names[0] {
				job.firstChoice++
			}
		}
	}
	job.running++
	c.progress = now
	if ev, ok := c.evicted[ps.node]; ok {
		if ev.queue != job.queue && now.Sub(ev.at) < moveWindow {
			c.moves = append(c.moves, record.Move{T: c.traceSeconds(now), From: ev.queue, To: job.queue, Model: ev.model, Node: ps.node})
		}
		delete(c.evicted, ps.node)
	}
	c.kubelet.do(action{kind: markRunning, pod: ref(pod)})
	c.updateJobLocked(job, now)
}

// stopLocked records a pod stopped before it completed: evicted by the
// scheduler, or killed by the sim. Its work is lost, and its job's
// controller replaces it.
func (c *cluster) stopLocked(ps *podState, now time.Time) {
	ps.stopped = true
	if ps.done {
		return
	}
	job := ps.job
	if job.obj != nil && job.attempts[ps.index] == attemptOf(ps.name) {
		job.attempts[ps.index]++
		c.kubelet.do(action{kind: create, obj: podFor(job.obj, ps.index, job.attempts[ps.index])})
	}
	if ps.node == "" {
		return
	}
	job.running--
	if ps.started {
		job.lostCardSeconds += job.shape.whole * now.Sub(ps.workFrom).Seconds() * c.k
		ps.started = false
		ps.gen++
	}
	if ps.killed {
		job.killed++
		job.killing = true
		defer func() { job.killing = false }()
	} else {
		job.evicted++
		c.evicted[ps.node] = eviction{queue: job.queue, model: ps.model, at: now}
	}
	c.progress = now
	c.updateJobLocked(job, now)
}

// completeLocked records a pod's work done.
func (c *cluster) completeLocked(ps *podState, now time.Time) {
	ps.done, ps.started = true, false
	ps.job.running--
	ps.job.succeeded++
	c.progress = now
	c.kubelet.do(action{kind: markSucceeded, pod: podRef{namespace: ps.namespace, name: ps.name, uid: ps.uid}})
	if obj := ps.job.obj; obj != nil {
		c.kubelet.do(action{kind: jobSucceeded, job: types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name},
			succeeded: int32(ps.job.succeeded)})
	}
	c.updateJobLocked(ps.job, now)
}

// updateJobLocked applies the gang's rule of work: its pods work only while
// min of them run or are done, as a distributed job's workers wait for
// each other; a gang that falls below min loses the work of the members
// still running. It also tracks partial gangs and completion.
func (c *cluster) updateJobLocked(job *jobState, now time.Time) {
	up := job.running+job.succeeded >= job.spec.Min
	switch {
	case up:
		if !job.up && job.minBound.IsZero() {
			job.minBound = now
		}
		job.up = true
		for _, ps := range job.live {
			if ps.node != "" && !ps.started && !ps.done && !ps.stopped {
				ps.started, ps.workFrom = true, now
				ps.gen++
				c.timers.add(now.Add(time.Duration(float64(job.spec.Duration.Duration)/c.k)), ps.uid, ps.gen)
			}
		}
	case job.up:
		job.up = false
		for _, ps := range job.live {
			if ps.started {
				job.lostCardSeconds += job.shape.whole * now.Sub(ps.workFrom).Seconds() * c.k
				ps.started = false
				ps.gen++
			}
		}
	}
	partial := job.running > 0 && job.running+job.succeeded < job.spec.Min
	switch {
	case partial && job.partialSince.IsZero():
		job.partialSince, job.partialByKill = now, job.killing
	case !partial && !job.partialSince.IsZero():
		c.closePartialLocked(job, now)
	}
	if job.done.IsZero() && job.succeeded >= job.spec.Pods {
		job.done = now
	}
}

func (c *cluster) closePartialLocked(job *jobState, now time.Time) {
	if d := now.Sub(job.partialSince); d > partialGrace && !job.partialByKill {
		job.partialEver = true
		job.partialTotal += d
	}
	job.partialSince = time.Time{}
}

// fire is a pod's work timer going off.
func (c *cluster) fire(uid types.UID, gen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pods[uid]
	if ps == nil || ps.gen != gen || !ps.started || ps.stopped || ps.done {
		return
	}
	c.completeLocked(ps, c.now())
}

// finished tells whether every job is done, and when something last moved.
func (c *cluster) finished() (bool, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range c.jobs {
		if j.done.IsZero() {
			return false, c.progress
		}
	}
	return true, c.progress
}

// attemptOf is the try a pod named <job>-<index>-<attempt> is.
func attemptOf(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, _ := strconv.Atoi(name[i+1:])
	return n
}
