package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// TestQueueStatusAgreesWithScheduler: what `kubectl get queues -o yaml`
// shows is what the scheduler decides with (SPEC §1.1, §3.2), on a cluster
// where the three things that used to make them differ happen at once:
// cardUnlimitedCpuMemory is on, a pod is reserved (waiting at Permit) but
// not bound, and a node was re-sliced into MIG under a running pod. Every
// refusal's "would use" is the status's allocated plus the request.
func TestQueueStatusAgreesWithScheduler(t *testing.T) {
	path := configWith(t,
		"cardUnlimitedCpuMemory: false", "cardUnlimitedCpuMemory: true",
		"permitWaitingTimeSeconds: 60", "permitWaitingTimeSeconds: 600")
	createQueue(t, builder.MakeQueue("agree").Capability(corev1.ResourceCPU, "2").Card(h200, 3, 3).Card(mig, 2, 2).Obj())
	ns := createNamespaceInQueue(t, "status-agree", "agree")
	createNodes(t,
		builder.MakeNode("agree-0").GPU(h200, 2).Label("pool", "agree-0").Obj(),
		builder.MakeNode("agree-1").GPU(h200, 2).Label("pool", "agree-1").Obj())
	startSchedulerWith(t, path)

	// A whole-card pod asking for 4 cpu (not charged: cardUnlimitedCpuMemory).
	createPods(t, builder.MakePod(ns, "whole").Req("cpu", "4").GPU(1).CardName(h200).NodeSelector("pool", "agree-0").Obj())
	waitBound(t, ns, podsNamed("whole"))
	resliceToMIG(t, "agree-0", 7)

	// A gang member reserved on agree-1, waiting at Permit for its sibling,
	// which waits for the card of the queue's pod it evicted (holdLast).
	createPodGroup(t, ns, "r", 2)
	r := []*corev1.Pod{
		builder.MakePod(ns, "r-0").Label("scheduling.x-k8s.io/pod-group", "r").Req("cpu", "100m").GPU(1).NodeSelector("pool", "agree-1").Obj(),
		builder.MakePod(ns, "r-1").Label("scheduling.x-k8s.io/pod-group", "r").Req("cpu", "100m").GPU(1).Obj()}
	holdLast(t, ns, "agree", r)
	createPods(t, r...)

	// cpu: card pods are not charged, so 2 cpu of plain pods fit and a third does not.
	createPods(t, builder.MakePod(ns, "cpu-0").Req("cpu", "2").Obj())
	waitBound(t, ns, podsNamed("cpu-0"))
	createPods(t, builder.MakePod(ns, "cpu-1").Req("cpu", "1").Obj())
	waitPodEvent(t, ns, "cpu-1", "queue agree has insufficient cpu quota: requested 1, would use 3, capability 2")

	// cards: the re-sliced node's pod, the reserved one and the pod r-1
	// evicted (terminating, so still charged) hold 3 of 3 H200.
	createPods(t, builder.MakePod(ns, "two").Req("cpu", "100m").GPU(2).CardName(h200).Obj())
	waitPodEvent(t, ns, "two", "queue agree has insufficient NVIDIA-H200 quota: requested 2, would use 5, capability 3")

	// allocated: cpu-0's 2 cpu and no cpu of the card pods; their cards as
	// the plain resource too (nvidia.com/gpu is a resource like any other).
	waitQueueStatus(t, "agree", "cpu=2, NVIDIA-H200 3 of 3, within capability", func(q *v1alpha1.Queue) bool {
		c := meta.FindStatusCondition(q.Status.Conditions, "OverCapability")
		return q.Status.AllocatedSummary == "cpu=2,nvidia.com/gpu=3" && queueCards(q)[h200] == 3 &&
			c != nil && c.Status == metav1.ConditionFalse
	})
	q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(context.Background(), "agree", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range q.Status.Cards {
		if c.Name == h200 && (c.Guarantee != 3 || c.Capability != 3) {
			t.Errorf("status.cards[%s] = %+v, want guarantee 3 and capability 3", h200, c)
		}
	}
	neverBound(t, ns, "cpu-1", "two", "r-0")
}

// resliceToMIG turns a node's whole cards into slices MIG 1g.18gb slices,
// as the MIG manager does.
func resliceToMIG(t *testing.T, node string, slices int) {
	t.Helper()
	ctx := context.Background()
	n, err := env.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(n.Status.Allocatable, builder.GPUResource)
	delete(n.Status.Capacity, builder.GPUResource)
	n.Status.Allocatable[migRes] = *resourceQty(fmt.Sprint(slices))
	n.Status.Capacity[migRes] = *resourceQty(fmt.Sprint(slices))
	if _, err := env.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSemiPreemptibleChargeAcrossRestart: a semi-preemptible gang's elastic
// pods are charged as preemptible before and after a restart alike, so the
// room its min members leave in the guarantee stays usable by
// non-preemptible work (SPEC §3.1, §3.5, §5.2).
func TestSemiPreemptibleChargeAcrossRestart(t *testing.T) {
	createQueue(t, builder.MakeQueue("semi").Card(h200, 4, 8).Obj())
	ns := createNamespaceInQueue(t, "semi-restart", "semi")
	createNodes(t, gpuNodes("semi", 2, 4)...)
	s := startScheduler(t)

	createPodGroupFrom(t, builder.MakePodGroup(ns, "train", 2).Label(v1alpha1.PreemptibilityLabel, v1alpha1.SemiPreemptible).Obj())
	createPods(t, gangPods(ns, "train", 4, 1)...)
	waitBound(t, ns, gangsBound(map[string]int{"train": 4}))
	s.Stop()
	startScheduler(t)

	nonPreemptible := func(name string, gpus int) *corev1.Pod {
		return builder.MakePod(ns, name).Label(v1alpha1.PreemptibilityLabel, v1alpha1.NonPreemptible).Req("cpu", "100m").GPU(gpus).Obj()
	}
	createPods(t, nonPreemptible("np-0", 2))
	waitBound(t, ns, podsNamed("np-0"))
	createPods(t, nonPreemptible("np-1", 1))
	waitPodEvent(t, ns, "np-1", "queue semi: non-preemptible pods may use only its guarantee of NVIDIA-H200: requested 1, would use 5, guarantee 4")
	neverBound(t, ns, "np-1")
}

// TestStatusFollowsLeaderElection: Queue status is written wherever the
// scheduler runs: with leader election off no lease is needed, and with it
// on the status writers follow the scheduler's own lease, wherever its
// namespace is. A lease another process holds in cardinal-system (where an
// earlier Cardinal kept its status writers' lease) stops neither.
func TestStatusFollowsLeaderElection(t *testing.T) {
	holdForeignLease(t, "cardinal-system", "cardinal-controllers")
	tests := []struct {
		name  string
		edits []string
		setup func(t *testing.T)
	}{
		{name: "leader election off", edits: []string{"leaderElect: true", "leaderElect: false"}},
		{name: "another lease namespace", edits: []string{"resourceNamespace: cardinal-system", "resourceNamespace: cardinal-alt"},
			setup: func(t *testing.T) { grantLeases(t, "cardinal-alt") }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			queue := fmt.Sprintf("lease-%d", i)
			createQueue(t, builder.MakeQueue(queue).Obj())
			ns := createNamespaceInQueue(t, queue, queue)
			createNodes(t, builder.MakeNode(queue).Obj())
			startSchedulerWith(t, configWith(t, tc.edits...))
			createPods(t, builder.MakePod(ns, "p").Req("cpu", "1").Obj())
			waitBound(t, ns, podsNamed("p"))
			waitQueueStatus(t, queue, "allocated cpu=1", func(q *v1alpha1.Queue) bool {
				return q.Status.AllocatedSummary == "cpu=1"
			})
		})
	}
}

// holdForeignLease makes another process hold a lease for the rest of the test.
func holdForeignLease(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("another-cardinal"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	}
	_ = env.kube.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if _, err := env.kube.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.kube.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{}) })
}

// grantLeases makes namespace ns and lets the scheduler's service account
// hold its lease there, as an administrator who moves the lease would.
func grantLeases(t *testing.T, ns string) {
	t.Helper()
	createNamespace(t, ns)
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cardinal-leases"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"cardinal-scheduler"}, Verbs: []string{"get", "update", "patch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cardinal-leases"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cardinal-leases"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "cardinal-system", Name: "cardinal-scheduler"}},
	}
	if _, err := env.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestQueueStatusWritesPaced: with more queues changing at once than the
// status writer writes in a second, every Queue's status still comes to
// agree with the scheduler, and the writes are spread out at most
// statusWritesPerSecond a second rather than made in one burst that
// competes with binds (README, "Queue status"). It runs through two rounds
// of change: each queue's first pod binding, then every pod deleted.
func TestQueueStatusWritesPaced(t *testing.T) {
	const queues = 35
	ctx := context.Background()
	w, err := env.cardinal.SchedulingV1alpha1().Queues().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var (
		mu     sync.Mutex
		writes []time.Time
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			q, ok := ev.Object.(*v1alpha1.Queue)
			if ok && ev.Type == watch.Modified && strings.HasPrefix(q.Name, "paced-") {
				mu.Lock()
				writes = append(writes, time.Now())
				mu.Unlock()
			}
		}
	}()

	ns := createNamespace(t, "status-paced")
	var pods []*corev1.Pod
	for i := range queues {
		name := fmt.Sprintf("paced-%02d", i)
		createQueue(t, builder.MakeQueue(name).Capability(corev1.ResourceCPU, "2").Obj())
		pods = append(pods, cpuPods(ns, name, name, 1)...)
	}
	createNodes(t, builder.MakeNode("paced-0").Res("cpu", "64").Obj())
	startScheduler(t)
	createPods(t, pods...)
	waitBound(t, ns, boundCount(queues))
	for i := range queues {
		waitQueueStatus(t, fmt.Sprintf("paced-%02d", i), "allocated cpu 1", func(q *v1alpha1.Queue) bool {
			return q.Status.Allocated.Cpu().String() == "1"
		})
	}
	if err := env.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range queues {
		waitQueueStatus(t, fmt.Sprintf("paced-%02d", i), "allocated cpu 0 after its pod was deleted", func(q *v1alpha1.Queue) bool {
			return q.Status.Allocated.Cpu().IsZero()
		})
	}
	// The last write may still be on its way through the watch when its
	// status is read back: give the watch a little while to deliver it.
	// Too few after that is the failure reported below.
	_ = wait.PollUntilContextTimeout(ctx, poll, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(writes) >= 2*queues, nil
	})
	w.Stop()
	<-done

	// Between any two writes seen, at most one pass of writes for each
	// second between them, and two more passes for how unevenly the watch
	// may have delivered them. Writing every changed status at once would
	// put all 35 of a round in one pass.
	mu.Lock()
	defer mu.Unlock()
	if len(writes) < 2*queues {
		t.Fatalf("saw %d status writes for %d queues that each changed twice", len(writes), queues)
	}
	for i := range writes {
		for j := i; j < len(writes); j++ {
			window := writes[j].Sub(writes[i])
			if budget := statusWritesPerSecond * (int(window/time.Second) + 3); j-i+1 > budget {
				t.Fatalf("%d Queue status writes within %v, more than %d a second allows", j-i+1, window, statusWritesPerSecond)
			}
		}
	}
	t.Logf("%d status writes over %v", len(writes), writes[len(writes)-1].Sub(writes[0]))
}

// statusWritesPerSecond is the status writer's bound: writesPerSecond in
// pkg/queuestatus.
const statusWritesPerSecond = 10
