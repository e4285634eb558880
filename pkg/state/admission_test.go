package state

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// lockingFramework takes the scheduling queue's lock to activate pods, as
// kube-scheduler's PriorityQueue.Activate does.
type lockingFramework struct {
	fake.Framework
	queueLock *sync.Mutex
}

func (f *lockingFramework) Activate(logger klog.Logger, pods map[string]*corev1.Pod) {
	f.queueLock.Lock()
	defer f.queueLock.Unlock()
	f.Framework.Activate(logger, pods)
}

// TestAdmissionNeverCallsTheFrameworkInline: PreEnqueue runs under the
// scheduling queue's lock, so holding a gang there (which frees elastic
// pods that waited for it) must not call back into the queue, or the whole
// scheduler stops; the wake-up happens afterwards, from the outbox.
func TestAdmissionNeverCallsTheFrameworkInline(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 0, 8).Obj())
	s.OnPodGroup(podGroup("a", 1, nil))
	s.OnPodGroup(podGroup("b", 2, nil))
	a := []*corev1.Pod{member("a", 0), member("a", 1)}
	b := []*corev1.Pod{member("b", 0), member("b", 1)}
	for _, p := range append(a, b...) {
		s.OnPod(p)
	}
	s.Flush(&fake.Framework{}) // the gangs' pods woken as they became admissible
	s.Reserve(a[0], "n")
	if _, st := s.TryStart(a[1]); st.Code() != fwk.Unschedulable {
		t.Fatalf("elastic pod while b needs its min: %v, want parked", st)
	}

	queueLock := &sync.Mutex{}
	fw := &lockingFramework{queueLock: queueLock}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.out.run(ctx, fw)
	queueLock.Lock() // kube-scheduler holds it while it runs PreEnqueue
	done := make(chan struct{})
	go func() {
		s.Hold(b[0], "ns/b", QuotaAdmission{Holder: "CardinalQueue"}, builder.Because("held by its queue"))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("holding a gang from PreEnqueue blocked on the scheduling queue's lock")
	}
	queueLock.Unlock()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cmp.Equal(fw.Activated(), []string{"ns/a-1"}), nil
	})
	if err != nil {
		t.Errorf("the elastic pod freed by the hold was not woken afterwards: %v", fw.Activated())
	}
}

// TestSplitGangs: a gang whose pods resolve to different queues, or name
// another scheduler, is held with an event on its PodGroup, once per
// reason, and admitted once the split is mended.
func TestSplitGangs(t *testing.T) {
	s, _ := newTestState()
	s.OnPodGroup(podGroup("g", 2, nil))
	p0, p1 := member("g", 0), member("g", 1)
	p1.Labels[v1alpha1.QueueLabel] = "other"
	s.OnPod(p0)
	s.OnPod(p1)
	st := s.AdmitGang(p0)
	if want := "gang ns/g's pods resolve to different queues: other (1 pods), q (1 pods); set the label cardinal.dev/queue on the PodGroup"; !strings.HasPrefix(st.Message(), want) {
		t.Errorf("split across queues: %q, want %q...", st.Message(), want)
	}
	s.AdmitGang(p1)
	fw := &fake.Framework{}
	s.Flush(fw)
	if len(fw.Events()) != 1 || !strings.Contains(fw.Events()[0], "PodGroup/g GangSplit") {
		t.Errorf("events %v, want one GangSplit on the PodGroup", fw.Events())
	}
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.QueueLabel: "q"}))
	if st := s.AdmitGang(p0); st != nil {
		t.Errorf("with the queue on the PodGroup: %v, want admitted", st)
	}
	if g := s.books.gangs["ns/g"]; len(g.held) > 0 {
		t.Errorf("still held: %v", g.held)
	}

	foreign := member("g", 2)
	foreign.Spec.SchedulerName = "default-scheduler"
	s.OnPod(foreign)
	if st := s.AdmitGang(p0); !strings.Contains(st.Message(), "g-2 (default-scheduler)") {
		t.Errorf("split across schedulers: %q, want it to name g-2 and its scheduler", st.Message())
	}
	relabelled := foreign.DeepCopy()
	delete(relabelled.Labels, schedv1alpha1.PodGroupLabel)
	s.OnPod(relabelled)
	if st := s.AdmitGang(p0); st != nil {
		t.Errorf("after the foreign pod was relabelled out of the gang: %v, want admitted", st)
	}
	s.OnPod(foreign)
	s.OnPodDeleted(foreign)
	if st := s.AdmitGang(p0); st != nil {
		t.Errorf("after the foreign pod left: %v, want admitted", st)
	}
}

// TestDeferredUntilSynced: gang admission before the state has its initial
// lists turns pods away without waiting (it runs under the scheduling
// queue's lock) and wakes them once the state has synced.
func TestDeferredUntilSynced(t *testing.T) {
	s, clk := newTestState()
	synced := false
	s.wiring.sources = []source{{synced: func() bool { return synced }}}
	s.OnPodGroup(podGroup("g", 1, nil))
	p := member("g", 0)
	if st := s.AdmitGang(p); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("before sync: %v, want turned away", st)
	}
	fw := &fake.Framework{}
	s.tick()
	s.Flush(fw)
	if len(fw.Activated()) != 0 {
		t.Fatalf("woken before sync: %v", fw.Activated())
	}
	synced = true
	clk.Step(tickEvery)
	s.tick()
	s.Flush(fw)
	if diff := cmp.Diff([]string{"ns/g-0"}, fw.Activated()); diff != "" {
		t.Errorf("woken after sync (-want, +got):\n%s", diff)
	}
}

// TestPodGroupUpdatesWakeNobody: a PodGroup update (Cardinal's own status
// writes among them) wakes none of its pods; the queueing hints requeue
// them when the change can admit them (pkg/requeue).
func TestPodGroupUpdatesWakeNobody(t *testing.T) {
	s, _ := newTestState()
	pg := podGroup("g", 3, nil)
	s.OnPodGroup(pg)
	for i := range 3 {
		s.OnPod(member("g", i))
	}
	s.Flush(&fake.Framework{}) // the gang's pods woken as it reached minMember
	written := pg.DeepCopy()
	written.Status.Phase = schedv1alpha1.PodGroupPending
	written.Annotations = map[string]string{"cardinal.dev/waiting-reason": "0 of minMember 3 pods scheduled"}
	s.OnPodGroup(written)
	fw := &fake.Framework{}
	s.Flush(fw)
	if len(fw.Activated()) != 0 {
		t.Errorf("a PodGroup update woke %v", fw.Activated())
	}
}

// TestDeletedPodLeavesNoGhost: a pod whose delete the state has already
// applied, reaching PreFilter or Reserve again (the scheduler's informer
// handler runs apart from the state's), is judged but not recorded again:
// it would otherwise count for its gang and queue for ever.
func TestDeletedPodLeavesNoGhost(t *testing.T) {
	s, _ := newTestState()
	podIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.wiring.kube.pods = corelisters.NewPodLister(podIndexer)
	s.OnQueue(builder.MakeQueue("q").Obj())
	s.OnPodGroup(podGroup("g", 1, nil))
	p := member("g", 0)
	_ = podIndexer.Add(p)
	s.OnPod(p)
	_ = podIndexer.Delete(p)
	s.OnPodDeleted(p)
	if _, st := s.TryStart(p); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter of a deleted pod: %v, want refused", st)
	}
	if st := s.Reserve(p, "n"); st.IsSuccess() {
		t.Error("a deleted pod was reserved")
	}
	s.Prospect(p)
	if _, ok := s.books.pods[p.UID]; ok {
		t.Error("the deleted pod is recorded again")
	}
	if u := s.Usage("q"); len(u.Pending) != 0 || len(u.Allocated) != 0 {
		t.Errorf("queue counts a deleted pod: pending %v, allocated %v", u.Pending, u.Allocated)
	}
}

// TestShareOfMin: what the missing members of a gang's min need of its
// total is rounded down, and never overflows for totals the CRD accepts.
func TestShareOfMin(t *testing.T) {
	tests := []struct {
		total        int64
		missing, min int
		want         int64
	}{
		{10, 3, 3, 10},
		{10, 1, 3, 3},
		{5, 1, 2, 2},
		{5, 0, 2, 0},
		{5, 4, 2, 5},
		{5, 1, 0, 5},
		{math.MaxInt64, 999, 1000, math.MaxInt64/1000*999 + (math.MaxInt64%1000)*999/1000},
	}
	for _, tt := range tests {
		if got := ShareOfMin(tt.total, tt.missing, tt.min); got != tt.want {
			t.Errorf("ShareOfMin(%d, %d, %d) = %d, want %d", tt.total, tt.missing, tt.min, got, tt.want)
		}
	}
}
