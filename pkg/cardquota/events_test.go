package cardquota

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

func hints(t *testing.T, p *Plugin) map[fwk.EventResource]fwk.QueueingHintFn {
	t.Helper()
	events, err := p.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[fwk.EventResource]fwk.QueueingHintFn{}
	for _, e := range events {
		if e.QueueingHintFn == nil {
			t.Fatalf("events of %s requeue every pod: no hint", e.Event.Resource)
		}
		out[e.Event.Resource] = e.QueueingHintFn
	}
	return out
}

func TestHints(t *testing.T) {
	st := statetest.New()
	st.OnQueue(builder.MakeQueue("roomy").Card(rtx, 0, 4).Obj())
	st.OnQueue(builder.MakeQueue("spent").Card(rtx, 0, 0).Obj())
	p := &Plugin{state: st}
	h := hints(t, p)
	cardPod := func(name, queue string) *corev1.Pod {
		pod := builder.MakePod("ns", name).Label(v1alpha1.QueueLabel, queue).GPU(1).Obj()
		pod.UID = types.UID(name + "-" + queue)
		return pod
	}
	cpuPod := builder.MakePod("ns", "cpu").Label(v1alpha1.QueueLabel, "a").Req(corev1.ResourceCPU, "1").Obj()
	queue := func(name string, generation int64, allocated string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"cardSummary": allocated}}}
		u.SetKind("Queue")
		u.SetName(name)
		u.SetGeneration(generation)
		return u
	}
	tests := []struct {
		name           string
		res            fwk.EventResource
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		{"a card pod of its queue deleted", fwk.AssignedPod, cardPod("gone", "a"), nil, fwk.Queue},
		{"a card pod of another queue deleted, its queue with quota left: it waits for node room", fwk.AssignedPod, cardPod("gone", "b"), nil, fwk.Queue},
		{"a card pod of another queue deleted, a pod naming no model: it may wait for room on a node without one", fwk.AssignedPod, cardPod("gone", "b"), nil, fwk.Queue},
		{"a card pod of another queue deleted, its queue without quota for the model it names", fwk.AssignedPod, cardPod("gone", "b"), nil, fwk.QueueSkip},
		{"a pod without cards deleted", fwk.AssignedPod, cpuPod, nil, fwk.QueueSkip},
		{"its queue's card quota changed", eventhandler.QueueResource, queue("a", 1, ""), queue("a", 2, ""), fwk.Queue},
		{"its queue's status written", eventhandler.QueueResource, queue("a", 1, "NVIDIA-H200=1/3"), queue("a", 1, "NVIDIA-H200=2/3"), fwk.QueueSkip},
		{"a node with cards added", fwk.Node, nil, builder.MakeNode("n").GPU(rtx, 4).Obj(), fwk.Queue},
		{"a node without cards added", fwk.Node, nil, builder.MakeNode("n").Obj(), fwk.QueueSkip},
		{"a node whose cards have no model added", fwk.Node, nil, builder.MakeNode("n").Res(builder.GPUResource, "4").Obj(), fwk.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			waiting := cardPod("waiting", "a")
			switch {
			case strings.Contains(tc.name, "quota left"):
				waiting = cardPod("waiting", "roomy")
				waiting.Annotations = map[string]string{v1alpha1.CardNameAnnotation: rtx}
			case strings.Contains(tc.name, "naming no model"):
				waiting = cardPod("waiting", "spent")
			case strings.Contains(tc.name, "without quota for the model"):
				waiting = cardPod("waiting-named", "spent")
				waiting.Annotations = map[string]string{v1alpha1.CardNameAnnotation: rtx}
			}
			got, err := h[tc.res](klog.Background(), waiting, tc.oldObj, tc.newObj)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
