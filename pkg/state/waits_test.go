package state

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// TestWaitersWokenWhenTheStateHasTheChange: a pod turned away for room in
// its queue is woken when the state applies the change that can let it in
// (a placed pod of the queue gone, the Queue raised, a node's card models
// changed), not by Cardinal's own status writes: a queueing hint may have
// fired before the state had the change and judged the pod on old numbers.
func TestWaitersWokenWhenTheStateHasTheChange(t *testing.T) {
	s, _ := newTestState()
	q := builder.MakeQueue("q").Card(h200, 1, 1).Obj()
	q.Generation = 1
	s.OnQueue(q)
	s.OnNode(builder.MakeNode("n").GPU(h200, 4).Obj())
	running := bound(member("r", 0), "n")
	delete(running.Labels, schedv1alpha1.PodGroupLabel)
	s.OnPod(running)
	waiting := builder.MakePod("ns", "w").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	waiting.UID = "w"
	s.OnPod(waiting)
	wokenBy := func(change func()) []string {
		s.Flush(&fake.Framework{})
		s.WaitForRoom(waiting, "q", true)
		change()
		fw := &fake.Framework{}
		s.Flush(fw)
		return fw.Activated()
	}
	written := q.DeepCopy()
	written.Status.AllocatedSummary = "nvidia.com/gpu=1"
	if got := wokenBy(func() { s.OnQueue(written) }); len(got) != 0 {
		t.Errorf("a status write woke %v", got)
	}
	raised := q.DeepCopy()
	raised.Generation = 2
	raised.Spec.Cards[0].Capability = ptrTo[int32](2)
	if got := wokenBy(func() { s.OnQueue(raised) }); !cmp.Equal(got, []string{"ns/w"}) {
		t.Errorf("the Queue raised woke %v, want ns/w", got)
	}
	if got := wokenBy(func() { s.OnNode(builder.MakeNode("m").GPU("NVIDIA-B200", 4).Obj()) }); !cmp.Equal(got, []string{"ns/w"}) {
		t.Errorf("a node with new card models woke %v, want ns/w", got)
	}
	if len(s.waits.room) != 0 {
		t.Errorf("woken by a node, the pod's queue is left in the waiting room: %v", s.waits.room)
	}
	if got := wokenBy(func() { s.OnPodDeleted(running) }); !cmp.Equal(got, []string{"ns/w"}) {
		t.Errorf("a placed pod of the queue gone woke %v, want ns/w", got)
	}
	s.Reserve(waiting, "n")
	if got := wokenBy(func() {}); len(got) != 0 {
		t.Errorf("nothing changed, woke %v", got)
	}
}

// TestNewStateIsReady: every map of a new state is made, so the first
// event of any kind can be recorded.
func TestNewStateIsReady(t *testing.T) {
	s, _ := newTestState()
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Map && f.IsNil() {
			t.Errorf("State.%s is a nil map", v.Type().Field(i).Name)
		}
	}
}

// TestGangThatLosesItsMinWakesItsOwnElasticPods: pods of gang a parked as
// elastic (a had its min placed, b needed its own) are a's min members once
// a's placed pods complete; nothing else would wake them, since a itself
// is then the gang that needs its min. They are woken at once, not after
// kube-scheduler's flush of unschedulable pods.
func TestGangThatLosesItsMinWakesItsOwnElasticPods(t *testing.T) {
	s, _ := newTestState()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 0, 8).Obj())
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnPodGroup(podGroup("a", 2, nil))
	s.OnPodGroup(podGroup("b", 2, nil))
	a := []*corev1.Pod{member("a", 0), member("a", 1), member("a", 2), member("a", 3)}
	for _, p := range append(a, member("b", 0), member("b", 1)) {
		s.OnPod(p)
	}
	s.OnPod(bound(a[0], "n"))
	s.OnPod(bound(a[1], "n"))
	s.Flush(&fake.Framework{})
	for _, p := range a[2:] {
		if st, status := s.TryStart(p); status.Code() != fwk.Unschedulable || st.Elastic {
			t.Fatalf("pod %s beyond a's min while b needs its min: %v, want parked as elastic", p.Name, status)
		}
	}
	if parked, elastic := s.waits.parked("ns/a", a[2].UID); !parked || !elastic {
		t.Fatalf("a-2 not parked as elastic")
	}
	for _, p := range a[:2] {
		done := bound(p, "n")
		done.Status.Phase = corev1.PodSucceeded
		s.OnPod(done)
	}
	fw := &fake.Framework{}
	s.Flush(fw)
	if got, want := fw.Activated(), []string{"ns/a-2", "ns/a-3"}; !cmp.Equal(got, want) {
		t.Errorf("a's min completed, woke %v, want its pods that waited as elastic %v", got, want)
	}
	if parked, _ := s.waits.parked("ns/a", a[2].UID); parked {
		t.Errorf("a-2 is still parked")
	}
	// Let through now, they are a's min members and may preempt.
	st, status := s.TryStart(a[2])
	if !status.IsSuccess() || st.Elastic {
		t.Errorf("a-2 after a lost its min: %+v %v, want a min member let through", st, status)
	}
}
