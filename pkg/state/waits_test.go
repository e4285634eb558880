package state

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
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
