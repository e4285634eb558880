package refusal

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"
)

var until = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// cases: every kind of refusal, the sentence people read and what would
// let the pod run.
var cases = []struct {
	r         Refusal
	text, fix string
}{
	{QuotaExceeded{Queue: "a", Resource: "cpu", Requested: 2000, WouldUse: 5000, Capability: 4000},
		"queue a has insufficient cpu quota: requested 2, would use 5, capability 4",
		"queue a needs 1 more cpu: raise its capability for cpu to 5, or end work in queue a that uses it (kubectl cardinal queues shows its use)"},
	{QuotaExceeded{Queue: "a", Resource: "memory", Requested: 8 << 30, WouldUse: 40 << 30, Capability: 32 << 30},
		"queue a has insufficient memory quota: requested 8Gi, would use 40Gi, capability 32Gi",
		"queue a needs 8Gi more memory: raise its capability for memory to 40Gi, or end work in queue a that uses it (kubectl cardinal queues shows its use)"},
	{QuotaExceeded{Queue: "a", Resource: "NVIDIA-H200|NVIDIA-A100", Requested: 3, WouldUse: 3, Capability: 2},
		"queue a has insufficient NVIDIA-H200|NVIDIA-A100 quota: requested 3, would use 3, capability 2",
		"it alone asks for 3 NVIDIA-H200|NVIDIA-A100, more than queue a's capability of 2: raise the capability to at least 3, or ask for less (a lower minMember, smaller pods)"},
	{GuaranteeExceeded{Queue: "a", Resource: "cpu", Requested: 2000, WouldUse: 3000, Guarantee: 1000},
		"queue a: non-preemptible pods may use only its guarantee of cpu: requested 2, would use 3, guarantee 1",
		"raise queue a's guarantee of cpu to 3, or make the workload preemptible (label cardinal.dev/preemptibility)"},
	{GangOverQuota{Gang: "ns/g", Missing: 8, Quota: QuotaExceeded{Queue: "a", Resource: "NVIDIA-H200", Requested: 32, WouldUse: 44, Capability: 12}, Note: "its elastic pods counted as free"},
		"gang ns/g is held: its min needs 8 more pods; queue a has insufficient NVIDIA-H200 quota: requested 32, would use 44, capability 12 (its elastic pods counted as free)",
		"it alone asks for 32 NVIDIA-H200, more than queue a's capability of 12: raise the capability to at least 44, or ask for less (a lower minMember, smaller pods)"},
	{GangOverGuarantee{Gang: "ns/g", Preemptibility: "non-preemptible", Missing: 2, Queue: "a", Resource: "NVIDIA-H200", Guarantee: 2, WouldUse: 4},
		"gang ns/g is held: it is non-preemptible and its min needs 2 more pods; queue a guarantees NVIDIA-H200 2 and non-preemptible pods would use 4",
		"raise queue a's guarantee of NVIDIA-H200 to 4, or make the workload preemptible (label cardinal.dev/preemptibility)"},
	{AnnotationInvalid{Object: "pod ns/p", Annotation: "cardinal.dev/card-name", Problem: "empty name"},
		"pod ns/p: annotation cardinal.dev/card-name is invalid: empty name",
		"correct the annotation cardinal.dev/card-name on pod ns/p"},
	{GangRequestInvalid{Gang: "ns/g", Invalid: AnnotationInvalid{Object: "PodGroup ns/g", Annotation: "cardinal.dev/card-request", Problem: "not JSON"}},
		"gang ns/g is held: PodGroup ns/g: annotation cardinal.dev/card-request is invalid: not JSON",
		"correct the annotation cardinal.dev/card-request on PodGroup ns/g"},
	{NoModelQuota{Queue: "a", Model: "NVIDIA-H200"},
		"queue a has no quota for card model NVIDIA-H200: add it to the queue's spec.cards, or ask for a model the queue lists",
		"add NVIDIA-H200 to queue a's spec.cards, or ask for a model the queue lists (annotation cardinal.dev/card-name)"},
	{NoQueue{Queue: "nowhere"},
		"queue nowhere does not exist: create it, or set the label cardinal.dev/queue on the pod, its PodGroup or its namespace to an existing queue",
		"create the Queue nowhere, or set the label cardinal.dev/queue to a queue that exists"},
	{QueueUnreadable{Queue: "a", Why: "the Queue CRD is not installed"},
		"queue a cannot be read: the Queue CRD is not installed; its pods wait until it can",
		"install Cardinal's Queue CRD and the RBAC to read it (kubectl apply -k config/)"},
	{NamespaceDenied{Namespace: "x", Queue: "b", Selector: "team=b"},
		"namespace x may not use queue b: its spec.namespaceSelector team=b does not match the namespace's labels; label namespace x to match it, or set the label cardinal.dev/queue on the pod, its PodGroup or its namespace to a queue namespace x may use",
		"label namespace x to match queue b's namespaceSelector team=b, or use a queue namespace x may use"},
	{OwnerUnseen{Owner: "Job ns/j"},
		"its owner Job ns/j is not seen yet: the pod waits for it, since its cardinal.dev/preemptibility label decides how the pod is placed",
		"nothing: it is tried as soon as Job ns/j is seen; if it was deleted, delete the pod"},
	{Relabelled{What: "queue", From: "a", To: "b"},
		"its queue changed from a to b while it was being scheduled; it is tried again",
		"nothing: it is tried again as its queue is now, b"},
	{Relabelled{What: "preemptibility", From: "preemptible", To: "non-preemptible"},
		"its preemptibility changed from preemptible to non-preemptible while it was being scheduled; it is tried again",
		"nothing: it is tried again as its preemptibility is now, non-preemptible"},
	{Loading{}, "waiting for Cardinal's view of the cluster to load (scheduler starting)",
		"nothing: it is tried once the scheduler has loaded the cluster"},
	{NoPodGroup{Gang: "ns/g"},
		"PodGroup ns/g not found: create it, or remove the label scheduling.x-k8s.io/pod-group from the pod",
		"create the PodGroup ns/g, or remove the label scheduling.x-k8s.io/pod-group from the pod"},
	{PodGroupUnreadable{Gang: "ns/g", Why: "forbidden"},
		"PodGroup ns/g cannot be read: forbidden; the gang's pods wait until it can",
		"install the scheduler-plugins PodGroup CRD and the RBAC to read it (kubectl apply -k config/)"},
	{AwaitingGroup{Pod: "ns/train-0", Owner: "Job train"},
		"pod ns/train-0 of Job train waits for Cardinal to make its PodGroup, or to find that it is a gang of one",
		"nothing if it lasts a moment: the grouper runs in the leading cardinal-scheduler; if it lasts, its events on the pod and the workload say why"},
	{GangIncomplete{Gang: "ns/g", Have: 2, Min: 3},
		"gang ns/g has 2 of its minMember 3 pods; waiting for 1 more",
		"create 1 more pods of the gang, or lower its minMember"},
	{GangIncomplete{Gang: "ns/g", Have: 2, Gated: 1, Min: 3},
		"gang ns/g has 2 of its minMember 3 pods that can be scheduled (1 more behind scheduling gates or waiting for their resource claims); waiting for 1 more",
		"lift the scheduling gates (spec.schedulingGates) or make the resource claims of 1 of its held pods, create more pods of the gang, or lower its minMember"},
	{GangBeingPlaced{Gang: "ns/a", Placed: 2, Min: 3},
		"waiting for gang ns/a, which is being placed (2 of its min 3 placed)",
		"nothing: it is tried as soon as gang ns/a is placed or gives up (gangs are placed one at a time, so none deadlocks)"},
	{ElasticWaits{Gang: "ns/a", Missing: 1, Min: 3},
		"elastic pods wait while gang ns/a still needs 1 more pods for its min of 3",
		"nothing: elastic pods are placed once gang ns/a has its min, on room nobody's min needs"},
	{BackingOff{Gang: "ns/g", Until: until, After: "x"},
		"gang ns/g is backing off until 2026-11-23T10:00:00Z after: x",
		"nothing: it is tried again at 2026-11-23T10:00:00Z"},
	{GangSplitScheduler{Gang: "ns/g", Others: []string{"g-1 (default-scheduler)"}, Scheduler: "cardinal-scheduler"},
		"gang ns/g has pods that name another scheduler: g-1 (default-scheduler); every pod of a gang must set schedulerName: cardinal-scheduler, or none of it can be placed all or nothing",
		"set schedulerName: cardinal-scheduler on every pod of gang ns/g"},
	{GangSplitQueues{Gang: "ns/g", Queues: map[string]int{"b": 1, "a": 2}},
		"gang ns/g's pods resolve to different queues: a (2 pods), b (1 pods); set the label cardinal.dev/queue on the PodGroup so the gang is charged to one queue",
		"label PodGroup ns/g with cardinal.dev/queue, or give all its pods the same queue"},
	{GangDoesNotFit{Gang: "ns/g", Missing: 4, Room: 2},
		"gang ns/g does not fit: its min needs 4 more pods placed and free resources hold at most 2 like them",
		"free room on nodes: running pods ending, nodes added, or preemption when its queue is below its deserved share (pods that are non-preemptible are never evicted)"},
	{ElasticNoRoom{Gang: "ns/g"},
		"elastic pod of gang ns/g waits for free capacity; elastic pods never preempt",
		"free room on nodes: elastic pods never preempt, they wait for running pods to end or nodes to be added"},
	{ModelNotAllowed{Node: "n1", Model: "NVIDIA-H200", Models: []string{"NVIDIA-B200"}},
		"node n1 has NVIDIA-H200, which is not among the pod's card models NVIDIA-B200",
		"add nodes with card model NVIDIA-B200, or allow other models in the pod's cardinal.dev/card-name annotation"},
	{NoModelOnNode{Node: "n1", Models: []string{"A", "B"}},
		"node n1 has none of the pod's card models A|B",
		"add nodes with card model A|B, or allow other models in the pod's cardinal.dev/card-name annotation"},
	{UnlabelledCards{Node: "n1", Models: []string{"A"}},
		"node n1's cards have no model (no product label), and the pod asks for A",
		"label the nodes' GPUs with their product (GPU feature discovery sets nvidia.com/gpu.product), or drop the pod's card-name annotation"},
	{ModelsUnknown{Node: "n1"},
		"node n1's card models are not known to Cardinal yet; the pod is tried again when they are",
		"nothing: it is tried again once the node's card models are known"},
	{MixedResources{Pod: "ns/p", Models: [2]string{"NVIDIA-H200", "NVIDIA-H200/mig-1g.18gb-mixed"}, Kinds: [2]string{"whole cards", "nvidia.com/mig-1g.18gb"}},
		"pod ns/p: card models NVIDIA-H200 and NVIDIA-H200/mig-1g.18gb-mixed need different resources (whole cards and nvidia.com/mig-1g.18gb), and a pod requests only one: list alternatives of the same kind, or run one workload per kind",
		"in the cardinal.dev/card-name annotation, list only models used through one resource (all whole cards, or all the same MIG or MPS slice)"},
	{WrongResource{Pod: "ns/p", Resource: "nvidia.com/gpu", Model: "NVIDIA-H200/mig-1g.18gb-mixed"},
		"pod ns/p requests nvidia.com/gpu, which is not what card model NVIDIA-H200/mig-1g.18gb-mixed is used through: request the model's resource or change the card-name annotation",
		"request the resource card model NVIDIA-H200/mig-1g.18gb-mixed is used through, or change the cardinal.dev/card-name annotation"},
	{Insufficient{Resource: "nvidia.com/gpu"}, "Insufficient nvidia.com/gpu",
		"free nvidia.com/gpu on nodes: running pods ending, nodes added, or preemption when its queue is below its deserved share (pods that are non-preemptible are never evicted)"},
	{RoomKept{Node: "n1", Resource: "nvidia.com/gpu", Kept: 2, Free: 3},
		"node n1: its nvidia.com/gpu is kept for a gang that preempted for it (2 of 3 free is kept)",
		"nothing: the room is kept for a gang whose victims are terminating; the pod is tried on it once that gang is placed"},
	{NoAlternative{Each: []Refusal{NoModelQuota{Queue: "a", Model: "A"}, QuotaExceeded{Queue: "a", Resource: "B", Requested: 1, WouldUse: 3, Capability: 2}}},
		"queue a has no quota for card model A: add it to the queue's spec.cards, or ask for a model the queue lists; queue a has insufficient B quota: requested 1, would use 3, capability 2",
		"queue a needs 1 more B: raise its capability for B to 3, or end work in queue a that uses it (kubectl cardinal queues shows its use)"},
}

// TestRefusals: each refusal reads as written, says what would let the pod
// run, and comes back as the same value from the status that carried it
// through kube-scheduler and from the annotation that carried it to
// kubectl cardinal.
func TestRefusals(t *testing.T) {
	for _, tc := range cases {
		name := reflect.TypeOf(tc.r).Name()
		t.Run(name, func(t *testing.T) {
			if got := tc.r.String(); got != tc.text {
				t.Errorf("String:\n got %q\nwant %q", got, tc.text)
			}
			if got := tc.r.Fix(); got != tc.fix {
				t.Errorf("Fix:\n got %q\nwant %q", got, tc.fix)
			}
			st := Status(fwk.Unschedulable, tc.r)
			if st.Message() != tc.text || st.Code() != fwk.Unschedulable {
				t.Errorf("status: %v %q, want %q", st.Code(), st.Message(), tc.text)
			}
			back, ok := As(st)
			if !ok {
				t.Fatalf("no refusal read back from the status")
			}
			if diff := cmp.Diff(tc.r, back); diff != "" {
				t.Errorf("from the status (-want, +got):\n%s", diff)
			}
			if _, registered := kinds[name]; !registered {
				return // not carried in an annotation
			}
			enc, err := Encode(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.r, dec); diff != "" {
				t.Errorf("from %s (-want, +got):\n%s", enc, diff)
			}
		})
	}
}

// TestEveryKindHasACase: a new kind of refusal gets its sentence and fix
// tested.
func TestEveryKindHasACase(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[reflect.TypeOf(tc.r).Name()] = true
	}
	for kind := range kinds {
		if !seen[kind] {
			t.Errorf("refusal %s has no case in TestRefusals", kind)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, in := range []string{"", "{", `{"kind":"Nope","value":{}}`, `{"kind":"NoQueue","value":[]}`} {
		if r, err := Decode(in); err == nil {
			t.Errorf("Decode(%q) = %v, want an error", in, r)
		}
	}
	if _, ok := As(nil); ok {
		t.Error("a success carries no refusal")
	}
	if _, ok := As(fwk.NewStatus(fwk.Unschedulable, "plain words")); ok {
		t.Error("a status of plain words carries no refusal")
	}
}

// TestIdentity: a refusal with live counts is known by its sentence less
// them; others by their whole sentence.
func TestIdentity(t *testing.T) {
	placed := GangBeingPlaced{Gang: "ns/a", Placed: 2, Min: 3}
	later := GangBeingPlaced{Gang: "ns/a", Placed: 1, Min: 3}
	if Identity(placed) != Identity(later) || Identity(placed) != "waiting for gang ns/a, which is being placed" {
		t.Errorf("identities %q and %q", Identity(placed), Identity(later))
	}
	if e := (ElasticWaits{Gang: "ns/a", Missing: 1, Min: 3}); Identity(e) != "elastic pods wait while gang ns/a still needs" {
		t.Errorf("identity %q", Identity(e))
	}
	if q := (NoQueue{Queue: "q"}); Identity(q) != q.String() {
		t.Errorf("identity %q, want the sentence", Identity(q))
	}
}
