package preemption

import (
	"context"
	"strings"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

// TestPostFilterAfterNarrowingMiss: a pod that fit none of the nodes its
// cycle was narrowed to is not a preemptor: room may be free on the nodes
// it was not tried on. Nothing is planned; the cycle ends.
func TestPostFilterAfterNarrowingMiss(t *testing.T) {
	st := statetest.New()
	p := &Plugin{state: st}
	pod := builder.MakePod("ns", "p").GPU(1).CardName(h200 + "|" + rtx).Obj()
	pod.UID = "p"
	st.OnPod(pod)
	cs := framework.NewCycleState()
	state.MarkNarrowed(cs, h200, 3)
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("n", fwk.NewStatus(fwk.Unschedulable, "node(s) didn't have free ports for the requested pod ports"))

	res, s := p.PostFilter(context.Background(), cs, pod, statuses)
	if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "tried again on every node") {
		t.Errorf("PostFilter: %v, want UnschedulableAndUnresolvable saying it is tried on every node", s)
	}
	if res != nil {
		t.Errorf("PostFilter result %+v, want none (no nomination changed)", res)
	}
	if state.PreemptionTried(cs) {
		t.Errorf("preemption was tried")
	}
}
