package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"cardinal.dev/cardinal/pkg/sim/record"
)

func TestQueueSeries(t *testing.T) {
	tl := smallRun().obj().Timeline
	got := queueSeries(tl, "cardinal", []string{"production", "research"}, "other")
	want := []queueLine{
		{queue: "production", allocated: []point{{0, 3}, {1800, 6}, {3600, 9}}, deserved: []point{{0, 9}, {1800, 9}, {3600, 9}}},
		// research: its H100 rows plus 7 MIG 1g slices, one whole card.
		{queue: "research", allocated: []point{{0, 5}, {1800, 6}, {3600, 7}}, deserved: []point{{0, 7}, {1800, 7}, {3600, 7}}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(queueLine{})); diff != "" {
		t.Errorf("queueSeries (-want, +got):\n%s", diff)
	}

	got = queueSeries(tl, "cardinal", []string{"research"}, "other")
	if len(got) != 2 || got[1].queue != "other" || got[1].allocated[2].Y != 9 {
		t.Errorf("queueSeries with production left out = %+v, want research then other holding production", got)
	}
	if got := queueSeries(tl, "nobody", []string{"research"}, "other"); got != nil {
		t.Errorf("queueSeries of a scheduler with no rows = %+v, want nil", got)
	}
}

func TestTopQueues(t *testing.T) {
	var tl []record.Sample
	var queues []string
	for i := range maxQueues + 2 {
		q := string(rune('a' + i))
		queues = append(queues, q)
		// Queue "a" holds the least, "l" the most.
		tl = append(tl, record.Sample{Queue: q, PerCard: 1, Allocated: int64(i)})
	}
	shown, hidden := topQueues(tl, queues)
	if diff := cmp.Diff([]string{"c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}, shown); diff != "" || hidden != 2 {
		t.Errorf("topQueues = %v, %d hidden; want c to l, 2 hidden (-want, +got):\n%s", shown, hidden, diff)
	}
}

func TestCumulativeMoves(t *testing.T) {
	moves := []record.Move{{Scheduler: "a", T: 50}, {Scheduler: "b", T: 10}, {Scheduler: "a", T: 20}, {Scheduler: "a", T: 20}}
	want := []point{{0, 0}, {20, 1}, {20, 2}, {50, 3}, {100, 3}}
	if diff := cmp.Diff(want, cumulativeMoves(moves, "a", 100)); diff != "" {
		t.Errorf("cumulativeMoves (-want, +got):\n%s", diff)
	}
	if diff := cmp.Diff([]point{{0, 0}}, cumulativeMoves(nil, "a", 0)); diff != "" {
		t.Errorf("cumulativeMoves with none (-want, +got):\n%s", diff)
	}
}
