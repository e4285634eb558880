package replay

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// testCluster is a replay's bookkeeping with a clock the test moves and a
// kubelet whose writes are only queued.
type testCluster struct {
	*cluster
	clock time.Time
}

func newTestCluster(k float64) *testCluster {
	tc := &testCluster{clock: time.Unix(1000, 0)}
	tc.cluster = &cluster{k: k, start: tc.clock, nodes: map[string]*simNode{}, jobs: map[string]*jobState{},
		pods: map[types.UID]*podState{}, evicted: map[string]eviction{}, kubelet: newKubelet(nil)}
	tc.now = func() time.Time { return tc.clock }
	tc.timers = newTimers(tc.fire)
	return tc
}

func (tc *testCluster) after(d time.Duration) { tc.clock = tc.clock.Add(d) }

// job submits a gang of pods pods, min of which must run together, each of
// one whole card, for duration (trace time).
func (tc *testCluster) job(name, queue string, pods, min int, duration time.Duration) {
	tc.jobs["q-"+queue+"/"+name] = &jobState{spec: trace.Job{Name: name, Pods: pods, Min: min, Duration: trace.Duration{Duration: duration}},
		queue: queue, shape: podShape{whole: 1}, submit: tc.clock, live: map[types.UID]*podState{}, attempts: map[int]int{}}
}

func pod(job, queue string, i int, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-" + string(rune('0'+i)) + "-0", Namespace: "q-" + queue, UID: types.UID(job + string(rune('0'+i))),
			Labels: map[string]string{jobLabel: job, indexLabel: string(rune('0' + i))}},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

func (tc *testCluster) state(name, queue string) *jobState { return tc.jobs["q-"+queue+"/"+name] }

func TestGangWorksOnlyAtMin(t *testing.T) {
	tc := newTestCluster(10)
	tc.job("g", "a", 3, 2, 100*time.Second)
	tc.onPod(pod("g", "a", 0, ""))
	tc.onPod(pod("g", "a", 0, "n1"))
	j := tc.state("g", "a")
	assert.False(t, j.up, "one of min 2 bound: no work")
	assert.False(t, j.partialSince.IsZero(), "partial from the first bind")

	tc.after(time.Second)
	tc.onPod(pod("g", "a", 1, "n1"))
	assert.True(t, j.up)
	assert.Equal(t, 1.0, tc.traceSeconds(j.minBound)/10, "min bound a wall second (10 trace seconds) in")
	assert.True(t, j.partialSince.IsZero())
	assert.False(t, j.partialEver, "partial for a second, under the grace a bind takes")

	// A third, elastic, pod binds later and starts at once.
	tc.onPod(pod("g", "a", 2, "n2"))
	for _, ps := range j.live {
		assert.True(t, ps.started, ps.name)
	}

	// One pod evicted: two still run, at min, and only its work is lost
	// (5 s wall at 10x: 50 card-seconds). It is replaced.
	j.obj = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "q-a"}}
	tc.after(5 * time.Second)
	evict := func(i int, node string) {
		p := pod("g", "a", i, node)
		p.DeletionTimestamp = &metav1.Time{Time: tc.clock}
		tc.onPod(p)
	}
	evict(0, "n1")
	assert.True(t, j.up, "2 running of min 2")
	assert.InDelta(t, 50, j.lostCardSeconds, 1e-6)
	assert.Equal(t, 1, j.attempts[0], "replaced")

	// A second: below min, and the last one's work is lost too, as a
	// distributed job's workers stop without their peers.
	tc.after(time.Second)
	evict(1, "n1")
	assert.False(t, j.up)
	assert.Equal(t, 2, j.evicted)
	assert.InDelta(t, 50+60+60, j.lostCardSeconds, 1e-6)
	tc.after(4 * time.Second)
	tc.closePartialLocked(j, tc.clock)
	assert.True(t, j.partialEver, "below min for 4 s after an eviction counts")
}

func TestKilledGangIsNotPartialByTheScheduler(t *testing.T) {
	tc := newTestCluster(10)
	tc.job("g", "a", 2, 2, 100*time.Second)
	tc.onPod(pod("g", "a", 0, "n1"))
	tc.onPod(pod("g", "a", 1, "n2"))
	j := tc.state("g", "a")
	assert.True(t, j.up)
	// n2 removed: the sim kills its pod.
	tc.pods[types.UID("g1")].killed = true
	gone := pod("g", "a", 1, "n2")
	gone.DeletionTimestamp = &metav1.Time{Time: tc.clock}
	tc.onPod(gone)
	tc.after(10 * time.Second)
	tc.closePartialLocked(j, tc.clock)
	assert.Equal(t, 1, j.killed)
	assert.Zero(t, j.evicted)
	assert.False(t, j.partialEver, "the cluster broke the gang, not the scheduler")
	assert.Empty(t, tc.moves)
}

func TestMoveIsAnEvictionThenAnotherQueuesBind(t *testing.T) {
	tc := newTestCluster(10)
	tc.job("lo", "a", 1, 1, 100*time.Second)
	tc.job("hi", "b", 1, 1, 100*time.Second)
	tc.job("late", "c", 1, 1, 100*time.Second)
	tc.onPod(pod("lo", "a", 0, "n1"))
	victim := pod("lo", "a", 0, "n1")
	victim.DeletionTimestamp = &metav1.Time{Time: tc.clock}
	tc.onPod(victim)
	tc.after(time.Second)
	tc.onPod(pod("hi", "b", 0, "n1"))
	if assert.Len(t, tc.moves, 1) {
		assert.Equal(t, "a", tc.moves[0].From)
		assert.Equal(t, "b", tc.moves[0].To)
		assert.InDelta(t, 10, tc.moves[0].T, 1e-6)
	}
	// A bind long after an eviction is not a move.
	tc.onPod(pod("late", "c", 0, "n2"))
	tc.after(time.Minute)
	assert.Len(t, tc.moves, 1)
}

func TestJobDoneWhenEveryPodSucceeded(t *testing.T) {
	tc := newTestCluster(10)
	tc.job("g", "a", 2, 2, 100*time.Second)
	tc.onPod(pod("g", "a", 0, "n1"))
	tc.onPod(pod("g", "a", 1, "n1"))
	j := tc.state("g", "a")
	tc.after(10 * time.Second)
	for _, ps := range j.live {
		tc.fire(ps.uid, ps.gen)
	}
	assert.Equal(t, 2, j.succeeded)
	assert.InDelta(t, 100, tc.traceSeconds(j.done), 1e-6)
	done, _ := tc.finished()
	assert.True(t, done)
}

// TestSucceededCountedInTheJob: each pod that succeeds is counted in its
// Job's status, as the Job controller counts it, and a count that lands
// late never lowers it.
func TestSucceededCountedInTheJob(t *testing.T) {
	tc := newTestCluster(10)
	tc.job("g", "a", 3, 2, 100*time.Second)
	j := tc.state("g", "a")
	j.obj = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "q-a", Name: "g"}}
	tc.onPod(pod("g", "a", 0, "n1"))
	tc.onPod(pod("g", "a", 1, "n1"))
	tc.after(10 * time.Second)
	for _, ps := range j.live {
		tc.fire(ps.uid, ps.gen)
	}
	var counts []int32
	for _, a := range tc.kubelet.queue {
		if a.kind == jobSucceeded {
			assert.Equal(t, types.NamespacedName{Namespace: "q-a", Name: "g"}, a.job)
			counts = append(counts, a.succeeded)
		}
	}
	assert.Equal(t, []int32{1}, counts, "one write queued per Job at a time")
	assert.Equal(t, int32(2), tc.kubelet.succeeded[types.NamespacedName{Namespace: "q-a", Name: "g"}], "it writes the newest count")

	client := kubefake.NewSimpleClientset(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "q-a", Name: "g"}})
	k := newKubelet(client)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "q-a", Name: "g"}
	for _, n := range []int32{2, 1} {
		assert.NoError(t, k.write(ctx, action{kind: jobSucceeded, job: key, succeeded: n}))
	}
	got, err := client.BatchV1().Jobs("q-a").Get(ctx, "g", metav1.GetOptions{})
	assert.NoError(t, err)
	assert.Equal(t, int32(2), got.Status.Succeeded)
	assert.NoError(t, k.write(ctx, action{kind: jobSucceeded, job: types.NamespacedName{Namespace: "q-a", Name: "gone"}, succeeded: 1}))
}
