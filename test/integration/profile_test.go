package integration

import (
	"testing"

	"cardinal.dev/cardinal/test/builder"
)

// TestProfileBindsOnlyItsOwnPods: the cardinal-scheduler profile binds pods
// that opt in with schedulerName, and leaves other schedulers' pods alone.
func TestProfileBindsOnlyItsOwnPods(t *testing.T) {
	ns := createGPUNamespace(t, "profile")
	createNodes(t, builder.MakeNode("profile-n1").GPU("NVIDIA-H200", 8).Obj())
	startScheduler(t)

	createPods(t,
		builder.MakePod(ns, "cardinal").Req("cpu", "1").GPU(1).Obj(),
		builder.MakePod(ns, "other").SchedulerName("default-scheduler").Req("cpu", "1").Obj(),
	)
	nodes := waitBound(t, ns, podsNamed("cardinal"))
	if nodes["cardinal"] != "profile-n1" {
		t.Errorf("pod cardinal bound to %q, want profile-n1", nodes["cardinal"])
	}
	neverBound(t, ns, "other")
}
