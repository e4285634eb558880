package coscheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/requeue"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

func TestGangMemberChangedHint(t *testing.T) {
	member := func(name, group, scheduler string) *corev1.Pod {
		return builder.MakePod("ns", name).Label(PodGroupLabel, group).SchedulerName(scheduler).Obj()
	}
	waiting := member("a-0", "a", builder.SchedulerName)
	relabelled := member("a-1", "a", builder.SchedulerName)
	relabelled.Labels["cardinal.dev/queue"] = "q"
	tests := []struct {
		name           string
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		{"a new member of its gang", nil, member("a-1", "a", builder.SchedulerName), fwk.Queue},
		{"a pod of another gang", nil, member("b-0", "b", builder.SchedulerName), fwk.QueueSkip},
		{"a pod without a gang", nil, builder.MakePod("ns", "single").Obj(), fwk.QueueSkip},
		{"a member deleted: fewer pods cannot help", member("a-1", "a", builder.SchedulerName), nil, fwk.QueueSkip},
		{"a pod of another scheduler deleted: the split is over", member("a-1", "a", "default-scheduler"), nil, fwk.Queue},
		{"a member's labels changed (its queue)", member("a-1", "a", builder.SchedulerName), relabelled, fwk.Queue},
		{"a pod of another scheduler relabelled out of the gang", member("a-2", "a", "default-scheduler"), builder.MakePod("ns", "a-2").SchedulerName("default-scheduler").Obj(), fwk.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plugin{state: statetest.New()}
			got, err := p.gangMemberChanged(klog.Background(), waiting, tc.oldObj, tc.newObj)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestOwnPodGroupChangedHint: PodGroups reach hints unstructured, from
// kube-scheduler's dynamic informer; only a change of the pod's own
// PodGroup that can admit it requeues it, not Cardinal's own status and
// annotation writes.
func TestOwnPodGroupChangedHint(t *testing.T) {
	pg := func(name string, generation int64, labels, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("scheduling.x-k8s.io/v1alpha1")
		u.SetKind("PodGroup")
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetGeneration(generation)
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	pod := builder.MakePod("ns", "a-0").Label(PodGroupLabel, "a").Obj()
	written := map[string]string{"cardinal.dev/scheduled": "2", "cardinal.dev/waiting-reason": "2 of minMember 3 pods scheduled"}
	tests := []struct {
		name           string
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		{"its PodGroup created", nil, pg("a", 1, nil, nil), fwk.Queue},
		{"another gang's PodGroup created", nil, pg("b", 1, nil, nil), fwk.QueueSkip},
		{"minMember changed", pg("a", 1, nil, nil), pg("a", 2, nil, nil), fwk.Queue},
		{"queue label changed", pg("a", 1, nil, nil), pg("a", 1, map[string]string{"cardinal.dev/queue": "q"}, nil), fwk.Queue},
		{"card request changed", pg("a", 1, nil, nil), pg("a", 1, nil, map[string]string{"cardinal.dev/card-request": `{"NVIDIA-H200":2}`}), fwk.Queue},
		{"Cardinal wrote its status annotations", pg("a", 1, nil, nil), pg("a", 1, nil, written), fwk.QueueSkip},
		{"status written", pg("a", 1, nil, written), pg("a", 1, nil, written), fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := requeue.OwnPodGroupChanged(gang.Of)(klog.Background(), pod, tc.oldObj, tc.newObj)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestVictimGoneHint: while a gang's preemption is under way, a placed pod
// deleted requeues its members (kube-scheduler's cache may see the victim
// go after the state did); otherwise, and for pods never placed, it does
// not.
func TestVictimGoneHint(t *testing.T) {
	f := newFixture(t)
	pods := f.gang("g", 2, 2, t0)
	victim := builder.MakePod("ns", "victim").Obj()
	victim.UID = "victim"
	victim.Spec.NodeName = "node"
	f.st.OnPod(victim)
	pending := builder.MakePod("ns", "pending").Obj()

	hint := func() fwk.QueueingHint {
		t.Helper()
		got, err := f.p.victimGone(klog.Background(), pods[0], victim, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := hint(); got != fwk.QueueSkip {
		t.Errorf("no preemption under way: %v, want QueueSkip", got)
	}
	pre, reason, _ := f.st.PreemptorOf(pods[0])
	if reason != "" {
		t.Fatal(reason)
	}
	f.st.Preempted(pre, []types.UID{victim.UID}, map[*corev1.Pod]string{pods[0]: "node", pods[1]: "node"})
	if got := hint(); got != fwk.Queue {
		t.Errorf("a placed pod deleted while the gang's preemption is under way: %v, want Queue", got)
	}
	if got, _ := f.p.victimGone(klog.Background(), pods[0], pending, nil); got != fwk.QueueSkip {
		t.Errorf("a pod never placed deleted: %v, want QueueSkip", got)
	}
}
