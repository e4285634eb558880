package convert

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDurationsClipped(t *testing.T) {
	nodes := makeNodes().Add("T4", 4, 2, 104000, 524288).CSV()
	pods := podsCSV(
		makePod("openb-pod-0001").Run(10),
		makePod("openb-pod-0002").Run(60),
		makePod("openb-pod-0003").Run(616),
		makePod("openb-pod-0004").Run(7200),
		makePod("openb-pod-0005").Run(145*24*3600),
		makePod("openb-pod-0006").At(100).Run(900).NeverScheduled(), // deletion − creation
		makePod("openb-pod-0007").At(100).Run(-5),                   // deleted before scheduled
	)
	tr := mustConvert(t, nodes, pods, opts(noGangs))
	got := map[string]time.Duration{}
	for _, j := range tr.Jobs {
		got[j.Name] = j.Duration.Duration
	}
	want := map[string]time.Duration{
		"p-0001": time.Minute, "p-0002": time.Minute, "p-0003": 616 * time.Second, "p-0004": 2 * time.Hour,
		"p-0005": 2 * time.Hour, "p-0006": 900 * time.Second, "p-0007": time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("durations (-want +got):\n%s", diff)
	}
	for _, s := range []string{"2 were raised to the shortest and 1 cut to the longest", "for the 1 pod never scheduled"} {
		if !strings.Contains(tr.About, s) {
			t.Errorf("About does not say %q:\n%s", s, tr.About)
		}
	}
}

func TestArrivalsCapGapsAndKeepOrder(t *testing.T) {
	// 200 gaps of 10s and one lull of a day: the lull is capped at the
	// 99th percentile (10s), so arrivals come evenly over the span.
	var created []int64
	at := int64(0)
	for i := range 202 {
		created = append(created, at)
		at += 10
		if i == 100 {
			at += 86400
		}
	}
	submits, gapCap := arrivals(created, 201*time.Second*3)
	if gapCap != 10 {
		t.Errorf("gap cap %ds, want 10s", gapCap)
	}
	for i, s := range submits {
		if want := time.Duration(3*i) * time.Second; s != want {
			t.Fatalf("submit %d at %v, want %v", i, s, want)
		}
	}
}

func TestArrivalSpanIsOfferedOverLoadTimesCards(t *testing.T) {
	nodes := makeNodes().Add("T4", 4, 2, 104000, 524288).Add("G2", 1, 8, 96000, 393216).CSV() // 16 cards
	var b []*podB
	for i, milli := range []int{1000, 470, 230, 1000, 810, 320, 1000, 100, 1000, 1000} {
		b = append(b, makePod("openb-pod-"+string(rune('a'+i))).GPU(1, milli).At(i*i*1000).Run(300+i*517))
	}
	b = append(b, makePod("openb-pod-z").GPU(8, 1000).At(200000).Run(3000))
	for _, load := range []float64{0.5, 1.3, 4} {
		tr := mustConvert(t, nodes, podsCSV(b...), opts(func(o *Options) { o.Load = load; o.Gangs = 0.5; o.Seed = 7 }))
		var offered float64
		var last time.Duration
		for i, j := range tr.Jobs {
			share := map[string]float64{"gpu": 1, "mps-2": 0.5, "mps-4": 0.25}[j.Resource]
			offered += float64(max(j.Pods, 1)*j.Cards) * share * j.Duration.Seconds()
			if i > 0 && j.Submit.Duration < tr.Jobs[i-1].Submit.Duration {
				t.Errorf("job %s arrives before the job created before it", j.Name)
			}
			last = max(last, j.Submit.Duration)
		}
		span := offered / (load * 16)
		if math.Abs(last.Seconds()-span) > 1 {
			t.Errorf("load %v: arrivals span %v, want W/(Load×C) = %.1fs", load, last, span)
		}
	}
}
