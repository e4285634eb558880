package elasticquota

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/eventhandler"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

func inQueue(name, queue string) *corev1.Pod {
	return builder.MakePod("ns", name).Label(v1alpha1.QueueLabel, queue).Obj()
}

func TestSameQueuePodFreedHint(t *testing.T) {
	p := &Plugin{state: statetest.New()}
	finished := inQueue("done", "a")
	finished.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		name           string
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		{"a placed pod of its queue deleted", inQueue("gone", "a"), nil, fwk.Queue},
		{"a placed pod of another queue deleted", inQueue("gone", "b"), nil, fwk.QueueSkip},
		{"a pod of its queue finished", inQueue("done", "a"), finished, fwk.Queue},
		{"a pod of its queue updated, still running", inQueue("run", "a"), inQueue("run", "a"), fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.sameQueuePodFreed(klog.Background(), inQueue("waiting", "a"), tc.oldObj, tc.newObj)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestOwnQueueChangedHint: Queues reach hints unstructured, from
// kube-scheduler's dynamic informer. Only a change of the pod's own queue's
// quota requeues it; Cardinal's own status writes, which update every Queue
// about once a second while pods come and go, do not.
func TestOwnQueueChangedHint(t *testing.T) {
	queue := func(name string, generation int64, annotations map[string]string, allocated string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"allocatedSummary": allocated}}}
		u.SetAPIVersion("scheduling.cardinal.dev/v1alpha1")
		u.SetKind("Queue")
		u.SetName(name)
		u.SetGeneration(generation)
		u.SetAnnotations(annotations)
		return u
	}
	hint := hintFor(t, &Plugin{state: statetest.New()}, eventhandler.QueueResource)
	tests := []struct {
		name           string
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		{"its queue created", nil, queue("a", 1, nil, ""), fwk.Queue},
		{"another queue created", nil, queue("b", 1, nil, ""), fwk.QueueSkip},
		{"its quota changed", queue("a", 1, nil, ""), queue("a", 2, nil, ""), fwk.Queue},
		{"its volcano card quota changed", queue("a", 1, nil, ""), queue("a", 1, map[string]string{v1alpha1.VolcanoCardQuotaAnnotation: `{"NVIDIA-H200":2}`}, ""), fwk.Queue},
		{"its status written", queue("a", 1, nil, "cpu=1"), queue("a", 1, nil, "cpu=2"), fwk.QueueSkip},
		{"another queue's quota changed", queue("b", 1, nil, ""), queue("b", 2, nil, ""), fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hint(klog.Background(), inQueue("waiting", "a"), tc.oldObj, tc.newObj)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// hintFor is the queueing hint the plugin registers for events of res.
func hintFor(t *testing.T, p *Plugin, res fwk.EventResource) fwk.QueueingHintFn {
	t.Helper()
	events, err := p.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Event.Resource == res {
			if e.QueueingHintFn == nil {
				t.Fatalf("events of %s requeue every pod: no hint", res)
			}
			return e.QueueingHintFn
		}
	}
	t.Fatalf("no event of %s registered", res)
	return nil
}
