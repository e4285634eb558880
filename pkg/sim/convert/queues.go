package convert

import (
	"fmt"
	"math"
	"math/rand/v2"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

// queueName names queue i (from 0): team-1 … team-N.
func queueName(i int) string { return fmt.Sprintf("team-%d", i+1) }

// queues are o.Queues alike queues, weight 1 and reclaimable, each listing
// every card model of the cluster (whole cards and MPS shares) with a
// guarantee of floor(o.Guarantee × the model's cards / o.Queues) and a
// capability of all of the model's cards, so a queue may borrow whatever
// is idle.
func queues(c *cluster, o Options) []trace.Queue {
	names, count := c.cardModels()
	out := make([]trace.Queue, o.Queues)
	for i := range out {
		reclaimable := true
		q := trace.Queue{Name: queueName(i), Weight: 1, Reclaimable: &reclaimable}
		for _, m := range names {
			all := int32(count[m])
			q.Cards = append(q.Cards, trace.CardQuota{
				Name:       m,
				Guarantee:  int32(math.Floor(o.Guarantee * float64(count[m]) / float64(o.Queues))),
				Capability: &all,
			})
		}
		out[i] = q
	}
	return out
}

// queuePicker draws a queue for each job: team-i with weight 1/i^skew
// (uniform when skew is 0).
type queuePicker struct {
	rng *rand.Rand
	cum []float64
}

func newQueuePicker(o Options, rng *rand.Rand) queuePicker {
	p := queuePicker{rng: rng, cum: make([]float64, o.Queues)}
	total := 0.0
	for i := range p.cum {
		total += math.Pow(float64(i+1), -o.Skew)
		p.cum[i] = total
	}
	return p
}

func (p queuePicker) pick() string {
	x := p.rng.Float64() * p.cum[len(p.cum)-1]
	for i, c := range p.cum {
		if x < c {
			return queueName(i)
		}
	}
	return queueName(len(p.cum) - 1)
}
