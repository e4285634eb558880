package grouper

import (
	"errors"
	"testing"

	"cardinal.dev/cardinal/pkg/workload"
)

// TestWalk: owners are followed through controller references, each hop
// checked by UID; an unknown kind ends the chain; an unreadable one, and a
// cycle, are errors.
func TestWalk(t *testing.T) {
	cron := mk("batch/v1", "CronJob", "nightly", nil)
	j := job("nightly-1", 1, 0).ownedBy(cron)
	kruise := mk("apps.kruise.io/v1beta1", "CloneSet", "web", nil)
	t.Run("up to the top", func(t *testing.T) {
		c, err := Walk(newFake(cron.u, j.u), podOf(j, "p"))
		if err != nil || len(c.Links) != 2 || c.Top().Obj.GetName() != "nightly" {
			t.Fatalf("chain %+v, %v; want the Job then the CronJob", c.Links, err)
		}
	})
	t.Run("a kind not read ends the chain", func(t *testing.T) {
		c, err := Walk(newFake(), podOf(kruise, "p"))
		if err != nil || len(c.Links) != 0 {
			t.Fatalf("chain %+v, %v; want none", c.Links, err)
		}
	})
	t.Run("an owner not seen yet", func(t *testing.T) {
		if _, err := Walk(newFake(), podOf(j, "p")); !errors.Is(err, ErrOwnerUnseen) {
			t.Fatalf("err %v, want ErrOwnerUnseen", err)
		}
	})
	t.Run("another object of the owner's name", func(t *testing.T) {
		again := job("nightly-1", 1, 0)
		again.u.SetUID("new")
		if _, err := Walk(newFake(again.u), podOf(j, "p")); !errors.Is(err, ErrOwnerUnseen) {
			t.Fatalf("err %v, want ErrOwnerUnseen", err)
		}
	})
	t.Run("an owner the scheduler may not read", func(t *testing.T) {
		r := newFake(j.u)
		r.unreadable[workload.Job] = true
		var u *Unreadable
		if _, err := Walk(r, podOf(j, "p")); !errors.As(err, &u) {
			t.Fatalf("err %v, want *Unreadable", err)
		}
	})
	t.Run("a cycle", func(t *testing.T) {
		a := mk("batch/v1", "Job", "a", nil)
		b := mk("batch/v1", "Job", "b", nil).ownedBy(a)
		a = a.ownedBy(b)
		if _, err := Walk(newFake(a.u, b.u), podOf(a, "p")); err == nil {
			t.Fatal("a cycle of owners was walked without end")
		}
	})
}
