package convert

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// placedPod is a pod as formGangs sees it: placed, whole cards unless shared.
func placedPod(created int64, cpuMilli int64, replicas int) pod {
	return pod{row: podRow{name: "p", created: created, cpuMilli: cpuMilli, memMiB: 16384, numGPU: 1, qos: "LS"},
		cards: 1, replicas: replicas}
}

func TestGangsTakeAlikePodsWithinTheWindow(t *testing.T) {
	pods := []pod{
		placedPod(0, 4000, 1),
		placedPod(10, 8000, 1), // other CPU: not alike
		placedPod(20, 4000, 4), // a quarter card: never in a gang
		placedPod(30, 4000, 1),
		placedPod(3599, 4000, 1),
		placedPod(3601, 4000, 1), // beyond the hour
	}
	o := opts(func(o *Options) { o.Gangs, o.Elastic, o.MaxGangSize = 1, 0, 8 })
	// With every pod starting a gang and sizes of at least 2, pod 0 takes
	// pods 3 and 4 when its size allows; what it may not take is fixed.
	for seed := range uint64(20) {
		units := formGangs(pods, o, rand.New(rand.NewPCG(seed, 1)))
		first := units[0].members
		for _, m := range first[1:] {
			if m != 3 && m != 4 {
				t.Errorf("seed %d: the first gang took pod %d", seed, m)
			}
		}
		if diff := cmp.Diff([]int{0, 3}, first[:2]); diff != "" {
			t.Errorf("seed %d: the first gang's pods (-want +got):\n%s", seed, diff)
		}
	}
}

func TestGangsNeverMixOrOutgrow(t *testing.T) {
	o := opts(func(o *Options) { o.Gangs, o.MaxGangSize, o.GangWindow, o.Elastic = 0.6, 5, 30*time.Minute, 0.5 })
	rng := rand.New(rand.NewPCG(3, 3))
	var pods []pod
	for i := range 2000 {
		p := placedPod(int64(i*37), int64(1000*(1+rng.IntN(3))), []int{1, 1, 1, 2, 4}[rng.IntN(5)])
		p.row.qos = []string{"LS", "BE"}[rng.IntN(2)]
		p.cardName = []string{"", "T4"}[rng.IntN(2)]
		pods = append(pods, p)
	}
	for seed := range uint64(10) {
		units := formGangs(pods, o, rand.New(rand.NewPCG(seed, 1)))
		seen := map[int]bool{}
		gangs := 0
		for _, u := range units {
			first := pods[u.members[0]]
			if len(u.members) > o.MaxGangSize {
				t.Errorf("seed %d: a gang of %d pods, more than %d", seed, len(u.members), o.MaxGangSize)
			}
			if len(u.members) > 1 {
				gangs++
				if first.replicas != 1 {
					t.Errorf("seed %d: a gang of shared pods", seed)
				}
			}
			if u.min < (len(u.members)+1)/2 || u.min > len(u.members) {
				t.Errorf("seed %d: min %d of %d pods", seed, u.min, len(u.members))
			}
			for k, m := range u.members {
				if seen[m] {
					t.Errorf("seed %d: pod %d is in two jobs", seed, m)
				}
				seen[m] = true
				if k > 0 && (alike(pods[m]) != alike(first) || pods[m].row.created > first.row.created+1800 || m < u.members[k-1]) {
					t.Errorf("seed %d: pod %d does not belong with pod %d", seed, m, u.members[0])
				}
			}
		}
		if len(seen) != len(pods) {
			t.Errorf("seed %d: %d of %d pods in jobs", seed, len(seen), len(pods))
		}
		if gangs == 0 {
			t.Errorf("seed %d: no gang formed", seed)
		}
	}
}

func TestGangJobs(t *testing.T) {
	nodes := makeNodes().Add("G2", 4, 8, 96000, 393216).CSV()
	pods := podsCSV(
		makePod("openb-pod-0001").GPU(2, 1000).At(0).Run(100),
		makePod("openb-pod-0002").GPU(2, 1000).At(50).Run(900),
		makePod("openb-pod-0003").GPU(2, 1000).At(60).Run(300),
	)
	tr := mustConvert(t, nodes, pods, opts(func(o *Options) { o.Gangs, o.MaxGangSize, o.Elastic = 1, 3, 1 }))
	// The first pod's gang is of 2 or 3 pods, elastic.
	j := tr.Jobs[0]
	if j.Name != "g-0001" || j.Pods < 2 || j.Min != (j.Pods+1)/2 || j.Cards != 2 || j.Submit.Duration != 0 {
		t.Errorf("first job %+v, want gang g-0001 of 2 or 3 elastic pods of 2 cards, submitted at 0", j)
	}
	if j.Duration.Duration != 900*time.Second {
		t.Errorf("gang runs %v, want its longest pod's 15m", j.Duration)
	}
}
