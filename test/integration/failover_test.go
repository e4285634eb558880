package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/pkg/controlplane"
)

// TestLeaderFailoverDuringAssembly: two replicas; the leader holds 3 of a
// gang's 4 members at Permit, waiting for the fourth, when it is killed
// with SIGKILL. The standby takes over with nothing of that assembly but
// what the API shows; the fourth member and a second gang of the same
// queue arrive, and another node with a card. The queue (capability 4)
// never goes above 4 cards bound, neither gang is ever partly bound, and
// one of them runs whole (SPEC §2.1, §3.1).
func TestLeaderFailoverDuringAssembly(t *testing.T) {
	ns := gpuQueue(t, "failover", 4, 4, true)
	createNodes(t, gpuNodes("failover-a", 1, 4)...)
	config := configWith(t, "  leaderElect: true\n", "  leaderElect: true\n  leaseDuration: 4s\n  renewDeadline: 3s\n  retryPeriod: 1s\n")
	allow := "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
	first := startSchedulerWith(t, config, allow)
	waitMetric(t, first, "cardinal_gangs{", "the first replica to lead")
	startSchedulerWith(t, config, allow)

	createPodGroup(t, ns, "a", 4)
	// The fourth member waits for a card of the queue's that a pod of
	// lower priority holds (holdLast): the other three are placed and wait
	// at Permit for it.
	a := gangPods(ns, "a", 4, 1)
	holdLast(t, ns, "failover", a)
	createPods(t, a...)
	waitMetric(t, first, `cardinal_gangs{state="assembling"} 1`, "gang a assembling on the leader")
	// Reserved pods count in the queue's allocation: all three wait at
	// Permit, beside the holder's card.
	waitMetric(t, first, `cardinal_queue_card_allocated{model="NVIDIA-H200",queue="failover"} 4`, "3 of gang a's members reserved on the leader")
	if n := boundPerGang(t, ns)["a"]; n != 0 {
		t.Fatalf("gang a has %d pods bound before its min was placed", n)
	}
	first.Kill()
	releaseHold(t, ns)

	createPodGroup(t, ns, "b", 2)
	// Of a's priority, so neither gang may evict the other.
	createPods(t, prioritized(highPriority, gangPods(ns, "b", 2, 1)...)...)
	createNodes(t, gpuNodes("failover-b", 1, 1)...)

	partly := partialWatch{}
	check := func() error {
		got := boundPerGang(t, ns)
		if err := partly.check(got, map[string]int{"a": 4, "b": 2}); err != nil {
			return err
		}
		if got["a"]+got["b"] > 4 {
			return fmt.Errorf("queue failover holds %d cards, capability 4 (%v)", got["a"]+got["b"], got)
		}
		return nil
	}
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		if err := check(); err != nil {
			return false, err
		}
		got := boundPerGang(t, ns)
		return got["a"] == 4 || got["b"] == 2, nil
	})
	if err != nil {
		t.Fatalf("after the failover no gang ran whole: %v (%v)", err, boundPerGang(t, ns))
	}
	got := boundPerGang(t, ns)
	if !(got["a"] == 4 && got["b"] == 0 || got["a"] == 0 && got["b"] == 2) {
		t.Fatalf("want one gang whole and the other not at all, got %v", got)
	}
	holdCountsWithin(t, ns, holdWindow, map[string][2]int{"a": {got["a"], got["a"]}, "b": {got["b"], got["b"]}})
}

// waitMetric waits until a scheduler's /metrics has a line containing want.
func waitMetric(t *testing.T, s *controlplane.Scheduler, want, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		body, err := tryScrape(s)
		return err == nil && strings.Contains(body, want), nil
	})
	if err != nil {
		body, _ := tryScrape(s)
		var gangs []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "cardinal_gang") {
				gangs = append(gangs, l)
			}
		}
		t.Fatalf("waiting for %s: no %q in /metrics:\n%s", what, want, strings.Join(gangs, "\n"))
	}
}
