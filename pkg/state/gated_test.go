package state

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/refusal"
	"cardinal.dev/cardinal/test/fake"
)

// TestGatedMembersDoNotCount: a member behind scheduling gates is not tried
// by kube-scheduler, so it does not make its gang complete. A gang that
// needs it for its min is not admitted: it reserves nothing, never becomes
// the gang being placed, and keeps no other gang's elastic pods waiting,
// however long its owner keeps the gate. Once the gate is removed the gang
// is complete and its pods are woken; a gated member that goes leaves no
// count behind.
func TestGatedMembersDoNotCount(t *testing.T) {
	s, _ := gangState(map[string]int32{"a": 3, "b": 2})
	gated := member("a", 2)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	a := []*corev1.Pod{member("a", 0), member("a", 1), gated}
	b := []*corev1.Pod{member("b", 0), member("b", 1), member("b", 2)}
	for _, p := range append(a, b...) {
		s.OnPod(p)
	}
	s.OnPod(bound(b[0], "n"))
	s.OnPod(bound(b[1], "n"))
	s.Flush(&fake.Framework{})

	want := refusal.GangIncomplete{Gang: "ns/a", Have: 2, Gated: 1, Min: 3}
	// a-2 through Cardinal's PreEnqueue first: kube-scheduler runs
	// PreEnqueue plugins in no fixed order, so that does not ungate it.
	for _, p := range []*corev1.Pod{gated, a[0], a[1]} {
		if r, _ := refusal.As(s.AdmitGang(p)); !cmp.Equal(r, refusal.Refusal(want)) {
			t.Errorf("admitting %s with a-2 gated: %v, want %v", p.Name, r, want)
		}
		if _, st := s.TryStart(p); st.Code() != fwk.UnschedulableAndUnresolvable {
			t.Errorf("trying %s with a-2 gated: %v, want turned away as incomplete", p.Name, st)
		}
	}
	if s.assembly.awaitingMin.Has("ns/a") {
		t.Errorf("a waits for its min with one of its min gated")
	}
	if start, st := s.TryStart(b[2]); !st.IsSuccess() || !start.Elastic {
		t.Errorf("b's elastic pod with a's min gated: %+v %v, want let through", start, st)
	}

	ungated := gated.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	s.OnPod(ungated)
	fw := &fake.Framework{}
	s.Flush(fw)
	if got, want := fw.Activated(), []string{"ns/a-0", "ns/a-1", "ns/a-2"}; !cmp.Equal(got, want) {
		t.Errorf("a-2's gate removed woke %v, want %v", got, want)
	}
	if st := s.AdmitGang(a[0]); !st.IsSuccess() {
		t.Errorf("admitting a-0 once a-2 is ungated: %v", st)
	}
	if !s.assembly.awaitingMin.Has("ns/a") {
		t.Errorf("a does not wait for its min once complete")
	}
	if _, st := s.TryStart(b[2]); st.Code() != fwk.Unschedulable {
		t.Errorf("b's elastic pod while a needs its min: %v, want parked", st)
	}

	g2 := member("a", 3)
	g2.Spec.SchedulingGates = gated.Spec.SchedulingGates
	s.OnPod(g2)
	s.OnPodDeleted(g2)
	if g := s.books.gangs["ns/a"]; g.gated != 0 || g.triable() != 3 {
		t.Errorf("a gated member came and went: gated %d, triable %d, want 0 and 3", g.gated, g.triable())
	}
}

// TestMemberWithMissingClaimDoesNotCount: a member naming a ResourceClaim
// that does not exist, is being deleted, or was made for another pod is
// held by DynamicResources at PreEnqueue, and kube-scheduler runs
// PreEnqueue plugins in no fixed order: reaching Cardinal's does not make
// it count. It counts once the claim is there, which wakes its gang; a
// claim deleted after makes the gang incomplete again. A pod whose
// template claim is not yet made waits too; a bound pod counts at once
// (after a restart).
func TestMemberWithMissingClaimDoesNotCount(t *testing.T) {
	s, _ := gangState(map[string]int32{"a": 2, "r": 1})
	claims := withClaims(s)
	a0, a1 := member("a", 0), member("a", 1)
	a1.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo("a-claim")}}
	s.OnPod(a0)
	s.OnPod(a1)
	s.Flush(&fake.Framework{})
	incomplete := refusal.Refusal(refusal.GangIncomplete{Gang: "ns/a", Have: 1, Gated: 1, Min: 2})
	for _, p := range []*corev1.Pod{a1, a0} { // a-1 through Cardinal's PreEnqueue first
		if r, _ := refusal.As(s.AdmitGang(p)); !cmp.Equal(r, incomplete) {
			t.Errorf("%s with a-1's claim missing: %v, want %v", p.Name, r, incomplete)
		}
	}

	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-claim", UID: "claim-uid"}}
	claims.set(claim)
	fw := &fake.Framework{}
	s.Flush(fw)
	if got := fw.Activated(); !cmp.Equal(got, []string{"ns/a-0", "ns/a-1"}) {
		t.Errorf("a-1's claim made woke %v, want a's pods", got)
	}
	if st := s.AdmitGang(a0); !st.IsSuccess() {
		t.Errorf("a-0 with a-1's claim made: %v", st)
	}

	deleting := claim.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	claims.set(deleting)
	if r, _ := refusal.As(s.AdmitGang(a0)); !cmp.Equal(r, incomplete) {
		t.Errorf("a-0 with a-1's claim being deleted: %v, want %v", r, incomplete)
	}
	claims.set(claim)
	claims.remove(claim)
	if r, _ := refusal.As(s.AdmitGang(a0)); !cmp.Equal(r, incomplete) {
		t.Errorf("a-0 with a-1's claim deleted: %v, want %v", r, incomplete)
	}

	// Made from a template: missing until the pod's status names a claim
	// made for it.
	a1t := a1.DeepCopy()
	a1t.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptrTo("gpu-template")}}
	s.OnPod(a1t)
	if g := s.books.gangs["ns/a"]; g.gated != 1 {
		t.Errorf("a-1 with its template claim not made: gated %d, want 1", g.gated)
	}
	forOther := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-1-gpu", UID: "made-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "other", UID: "other-uid", Controller: ptrTo(true)}}}}
	claims.set(forOther)
	a1t.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptrTo("a-1-gpu")}}
	s.OnPod(a1t)
	if g := s.books.gangs["ns/a"]; g.gated != 1 {
		t.Errorf("a-1 whose claim was made for another pod: gated %d, want 1", g.gated)
	}
	forA1 := forOther.DeepCopy()
	forA1.OwnerReferences[0].Name, forA1.OwnerReferences[0].UID = a1.Name, a1.UID
	claims.set(forA1)
	if st := s.AdmitGang(a0); !st.IsSuccess() {
		t.Errorf("a-0 with a-1's template claim made for it: %v", st)
	}

	restarted := bound(member("r", 0), "n")
	restarted.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo("gone")}}
	s.OnPod(restarted)
	if g := s.books.gangs["ns/r"]; g.gated != 0 {
		t.Errorf("a bound member with claims counts as gated")
	}
	s.OnPodDeleted(a1t)
	if n := len(s.books.claimUsers); n != 0 {
		t.Errorf("pods gone, %d claims still indexed", n)
	}
}

// TestMemberHeldWhileOthersWaitAtPermit: a member whose claim is deleted
// while its gang's placed pods wait at Permit for it ends the attempt at
// once: they give back their nodes (rejected) and the gang backs off as
// one whose member never came, rather than hold the one gang being placed
// for the whole Permit wait. Claim changes that do not decide whether
// DynamicResources holds the pod (allocation, reservedFor) change nothing.
func TestMemberHeldWhileOthersWaitAtPermit(t *testing.T) {
	s, clk := gangState(map[string]int32{"a": 2})
	claims := withClaims(s)
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-claim", UID: "claim-uid"}}
	claims.set(claim)
	a0, a1 := member("a", 0), member("a", 1)
	a1.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptrTo("a-claim")}, {Name: "again", ResourceClaimName: ptrTo("a-claim")}}
	s.OnPod(a0)
	s.OnPod(a1)
	if got := s.books.claimUsers["ns/a-claim"]; len(got) != 1 || len(s.books.pods["a-1"].claimKeys) != 1 {
		t.Errorf("a claim named twice by a-1: filed %d times", len(s.books.pods["a-1"].claimKeys))
	}
	if _, st := s.TryStart(a0); !st.IsSuccess() {
		t.Fatalf("a-0 not let through: %v", st)
	}
	if st := s.Reserve(a0, "n"); !st.IsSuccess() {
		t.Fatalf("a-0 not reserved: %v", st)
	}
	fw := &fake.Framework{}
	fw.Wait(a0)
	s.Flush(fw)

	allocated := claim.DeepCopy()
	allocated.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "a-0", UID: "a-0"}}
	s.OnResourceClaimChanged(claim, allocated)
	s.Flush(fw)
	if r := fw.WaitingPod(a0).Rejected(); r != "" {
		t.Fatalf("a claim's status written: a-0 rejected (%s)", r)
	}

	deleting := allocated.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	if err := claims.indexer.Update(deleting); err != nil {
		t.Fatal(err)
	}
	s.OnResourceClaimChanged(allocated, deleting)
	s.Flush(fw)
	if r := fw.WaitingPod(a0).Rejected(); r == "" {
		t.Errorf("a-1's claim being deleted while a-0 waits at Permit: a-0 not rejected")
	}
	if v, _ := s.GangStatus("ns/a"); !v.BackoffUntil.After(clk.Now()) {
		t.Errorf("a does not back off: %+v", v)
	}
	s.Unreserve(a0) // as kube-scheduler does for a rejected pod
	if s.assembly.assembling.Has("ns/a") {
		t.Errorf("a is still the gang being placed")
	}
}

// claimStore stands for the scheduler's ResourceClaim informer.
type claimStore struct {
	s       *State
	indexer cache.Indexer
}

// withClaims makes s read ResourceClaims from a store the test fills.
func withClaims(s *State) *claimStore {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s.wiring.kube.claims = resourcelisters.NewResourceClaimLister(indexer)
	return &claimStore{s: s, indexer: indexer}
}

func (c *claimStore) set(claim *resourceapi.ResourceClaim) {
	if err := c.indexer.Update(claim); err != nil {
		panic(err)
	}
	c.s.OnResourceClaim(claim)
}

func (c *claimStore) remove(claim *resourceapi.ResourceClaim) {
	if err := c.indexer.Delete(claim); err != nil {
		panic(err)
	}
	c.s.OnResourceClaimGone(claim)
}

// TestGivingUpBacksOffLonger: a gang whose placed members give up their
// reservations attempt after attempt (a Permit wait that runs out for a
// member that never comes) backs off twice as long each time, up to 32
// times podGroupBackoffSeconds, so it holds the one gang being placed
// less and less often; a failure of another kind backs off as usual.
func TestGivingUpBacksOffLonger(t *testing.T) {
	s, clk := gangState(map[string]int32{"g": 2})
	g0 := member("g", 0)
	s.OnPod(g0)
	s.OnPod(member("g", 1))
	backoff := s.Settings().GangBackoff
	giveUp := func() time.Duration {
		t.Helper()
		if _, st := s.TryStart(g0); !st.IsSuccess() {
			t.Fatalf("g-0 not let through: %v", st)
		}
		if st := s.Reserve(g0, "n"); !st.IsSuccess() {
			t.Fatalf("g-0 not reserved: %v", st)
		}
		s.Unreserve(g0)
		v, _ := s.GangStatus("ns/g")
		d := v.BackoffUntil.Sub(clk.Now())
		clk.Step(d)
		return d
	}
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 32, 32} {
		if got := giveUp(); got != want*backoff {
			t.Errorf("give-up %d backs off %s, want %s", i+1, got, want*backoff)
		}
	}
	// Made again, its PodGroup keeps the backoff of the give-ups.
	if _, st := s.TryStart(g0); !st.IsSuccess() {
		t.Fatalf("g-0 not let through: %v", st)
	}
	s.Reserve(g0, "n")
	s.Unreserve(g0)
	before, _ := s.GangStatus("ns/g")
	pg := podGroup("g", 2, nil)
	s.OnPodGroupGone(pg)
	pg.UID = "pg-g-made-again"
	s.OnPodGroup(pg)
	if after, _ := s.GangStatus("ns/g"); !after.BackoffUntil.Equal(before.BackoffUntil) {
		t.Errorf("its PodGroup made again after give-ups backs off until %v, want %v", after.BackoffUntil, before.BackoffUntil)
	}
	clk.Step(before.BackoffUntil.Sub(clk.Now()))
	s.FailGang("ns/g", "a member fits nowhere")
	if v, _ := s.GangStatus("ns/g"); v.BackoffUntil.Sub(clk.Now()) != backoff {
		t.Errorf("a failure of another kind backs off %s, want %s", v.BackoffUntil.Sub(clk.Now()), backoff)
	}
}
