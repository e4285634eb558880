package state

import (
	"fmt"
	"math/rand"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/workload"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// TestSemiPreemptibleRoles: a semi-preemptible gang's min members, by rank
// (oldest placed first), are charged non-preemptible and the rest elastic
// and preemptible, whatever order they were placed in; a state rebuilt
// from the API alone (a restart) charges them the same; and roles follow
// members leaving and minMember changing (SPEC §1.2, §3.1, §3.5, §5.2).
func TestSemiPreemptibleRoles(t *testing.T) {
	s, _ := newTestState()
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	pods := []*corev1.Pod{member("g", 0), member("g", 1), member("g", 2), member("g", 3)}
	for _, p := range pods {
		s.OnPod(p)
	}
	steps := []struct {
		place int
		want  [3]int64
	}{
		{3, [3]int64{1, 1, 0}}, // below min: a min member
		{2, [3]int64{2, 2, 0}},
		{0, [3]int64{3, 2, 1}}, // ranks before 3, which turns elastic
		{1, [3]int64{4, 2, 2}}, // ranks before 2, which turns elastic
	}
	for _, st := range steps {
		if status := s.Reserve(pods[st.place], "n"); status != nil {
			t.Fatal(status)
		}
		if got := roles(s); got != st.want {
			t.Errorf("after placing pod %d: allocated, non-preemptible, elastic = %v, want %v", st.place, got, st.want)
		}
	}

	// A restart: the same pods as the API shows them, in another order.
	rebuilt, _ := newTestState()
	rebuilt.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	rebuilt.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	for _, i := range rand.New(rand.NewSource(1)).Perm(len(pods)) {
		rebuilt.OnPod(bound(pods[i], "n"))
	}
	rebuilt.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	if got, want := roles(rebuilt), roles(s); got != want {
		t.Errorf("after a restart: %v, before it: %v", got, want)
	}

	s.OnPodDeleted(pods[0]) // a min member leaves: the oldest elastic pod takes its place
	if got, want := roles(s), [3]int64{3, 2, 1}; got != want {
		t.Errorf("after a min member left: %v, want %v", got, want)
	}
	s.OnPodGroup(podGroup("g", 3, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	if got, want := roles(s), [3]int64{3, 3, 0}; got != want {
		t.Errorf("after minMember rose to 3: %v, want %v", got, want)
	}
}

// TestProspect: what PreFilter judges a pod by is what Reserve charges.
func TestProspect(t *testing.T) {
	s, _ := newTestState()
	s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	s.OnPodGroup(podGroup("g", 2, map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}))
	pods := []*corev1.Pod{member("g", 0), member("g", 1), member("g", 2)}
	for _, p := range pods {
		s.OnPod(p)
	}
	if c := s.Prospect(pods[2]); !c.NonPreemptible || c.Displaced != nil {
		t.Errorf("first pod of a semi-preemptible gang: %+v, want non-preemptible", c)
	}
	s.Reserve(pods[1], "n")
	s.Reserve(pods[2], "n")
	c := s.Prospect(pods[0])
	if !c.NonPreemptible || c.Displaced == nil || c.Displaced.Cards[h200] != 1 {
		t.Errorf("an older pod of a gang at min: %+v, want non-preemptible, displacing one card's min member", c)
	}
	s.Reserve(pods[0], "n")
	if got := roles(s); got[1] != 2 {
		t.Errorf("after Reserve, non-preemptible = %d, want 2 as Prospect said", got[1])
	}
	if c := s.Prospect(member("g", 3)); c.NonPreemptible {
		t.Errorf("a younger pod of a gang at min: %+v, want elastic (preemptible)", c)
	}
}

// ownerFixture is a state with owner listers, a queue, and a Deployment
// (non-preemptible), its ReplicaSet and a pod of it, none delivered yet.
type ownerFixture struct {
	s                     *State
	h                     cache.ResourceEventHandler
	rsIndexer, depIndexer cache.Indexer
	dep                   *appsv1.Deployment
	rs                    *appsv1.ReplicaSet
	pod                   *corev1.Pod
}

func newOwnerFixture() ownerFixture {
	s, _ := newTestState()
	f := ownerFixture{s: s,
		rsIndexer:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		depIndexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
	}
	s.wiring.kube.owners = workload.Owners{ReplicaSets: appslisters.NewReplicaSetLister(f.rsIndexer), Deployments: appslisters.NewDeploymentLister(f.depIndexer)}
	f.h = s.ownerHandler()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	f.dep = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "dep",
		Labels: map[string]string{v1alpha1.PreemptibilityLabel: v1alpha1.NonPreemptible}}}
	f.rs = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep", Controller: ptrTo(true)}}}}
	f.pod = builder.MakePod("ns", "web-1-a").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	f.pod.UID = "pod"
	f.pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: ptrTo(true)}}
	return f
}

// TestOwnerLabelReclassifies: a pod seen before its ReplicaSet and
// Deployment (as after a restart, or when the pod informer is ahead) is
// classified by the Deployment's preemptibility label once both arrive, in
// either order, and again when the label changes, so its charge does not
// depend on the order informers deliver (SPEC §5.1).
func TestOwnerLabelReclassifies(t *testing.T) {
	for _, rsFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("ReplicaSet first: %v", rsFirst), func(t *testing.T) {
			f := newOwnerFixture()
			s, h, rsIndexer, depIndexer, dep, rs, pod := f.s, f.h, f.rsIndexer, f.depIndexer, f.dep, f.rs, f.pod
			s.OnNode(builder.MakeNode("n").GPU(h200, 8).Obj())
			s.OnPod(bound(pod, "n"))
			if got := s.Cards("q")[h200].NonPreemptible; got != 0 {
				t.Fatalf("before its owners arrived (priority 0): non-preemptible %d, want 0", got)
			}
			addRS := func() { _ = rsIndexer.Add(rs); h.OnAdd(rs, false) }
			addDep := func() { _ = depIndexer.Add(dep); h.OnAdd(dep, false) }
			if rsFirst {
				addRS()
				addDep()
			} else {
				addDep()
				addRS()
			}
			if got := s.Cards("q")[h200].NonPreemptible; got != 1 {
				t.Errorf("after its owners arrived: non-preemptible %d, want 1", got)
			}
			relabelled := dep.DeepCopy()
			relabelled.Labels[v1alpha1.PreemptibilityLabel] = v1alpha1.Preemptible
			_ = depIndexer.Update(relabelled)
			h.OnUpdate(dep, relabelled)
			if got := s.Cards("q")[h200].NonPreemptible; got != 0 {
				t.Errorf("after its Deployment was relabelled preemptible: non-preemptible %d, want 0", got)
			}
		})
	}
}

// TestPendingPodWaitsForItsOwner: a pending pod whose ReplicaSet, or that
// ReplicaSet's Deployment, has not been seen yet waits (its Deployment's
// label may make it non-preemptible, and a pod placed preemptible stays
// so, SPEC §3.7), and is woken once both are seen.
func TestPendingPodWaitsForItsOwner(t *testing.T) {
	f := newOwnerFixture()
	s, h, rsIndexer, depIndexer, dep, rs, pod := f.s, f.h, f.rsIndexer, f.depIndexer, f.dep, f.rs, f.pod
	s.OnPod(pod)
	if c := s.Prospect(pod); c.OwnerUnseen != "ReplicaSet ns/web-1" {
		t.Fatalf("before its ReplicaSet arrived: owner unseen %q", c.OwnerUnseen)
	}
	if got := s.AwaitOwner(pod); got != "ReplicaSet ns/web-1" {
		t.Fatalf("AwaitOwner = %q, want its ReplicaSet", got)
	}
	_ = rsIndexer.Add(rs)
	h.OnAdd(rs, false)
	c := s.Prospect(pod)
	if c.OwnerUnseen != "Deployment ns/web" {
		t.Fatalf("before its Deployment arrived: owner unseen %q", c.OwnerUnseen)
	}
	fw := &fake.Framework{}
	s.Flush(fw)
	if len(fw.Activated()) != 1 {
		t.Fatalf("woken when its ReplicaSet was seen: %v, want the pod", fw.Activated())
	}
	s.AwaitOwner(pod)
	_ = depIndexer.Add(dep)
	h.OnAdd(dep, false)
	c = s.Prospect(pod)
	if c.OwnerUnseen != "" || !c.NonPreemptible {
		t.Errorf("once its owners arrived: owner unseen %q, non-preemptible %v; want none, true", c.OwnerUnseen, c.NonPreemptible)
	}
	fw = &fake.Framework{}
	s.Flush(fw)
	if len(fw.Activated()) != 1 || fw.Activated()[0] != "ns/web-1-a" {
		t.Errorf("woken: %v, want the pod", fw.Activated())
	}
}

// TestOwnerSeenBeforeThePodWaited: a pod whose facts were derived before
// its owner arrived, and which was not waiting yet when it did (as at
// start-up), is found free to go when it is next tried.
func TestOwnerSeenBeforeThePodWaited(t *testing.T) {
	s, _ := newTestState()
	rsIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.wiring.kube.owners = workload.Owners{ReplicaSets: appslisters.NewReplicaSetLister(rsIndexer)}
	h := s.ownerHandler()
	s.OnQueue(builder.MakeQueue("q").Card(h200, 4, 8).Obj())
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rs"}}
	pod := builder.MakePod("ns", "web-1-a").Label(v1alpha1.QueueLabel, "q").GPU(1).Obj()
	pod.UID = "pod"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: ptrTo(true)}}
	s.OnPod(pod)
	_ = rsIndexer.Add(rs)
	h.OnAdd(rs, false)
	if got := s.AwaitOwner(pod); got != "" {
		t.Fatalf("AwaitOwner = %q once its ReplicaSet was seen, want none", got)
	}
	if c := s.Prospect(pod); c.OwnerUnseen != "" {
		t.Errorf("its facts still name %q unseen", c.OwnerUnseen)
	}
}
