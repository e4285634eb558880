package convert

import (
	"math/rand/v2"
	"time"
)

// unit is the pods one job runs: a plain pod, or a gang of alike pods.
// members index the pods, in creation order; min is how many must run
// together.
type unit struct {
	members []int
	min     int
}

// alikeKey is what the pods of one gang share: what each asks for, and
// its QoS class (so the gang has one priority).
type alikeKey struct {
	cards            int
	cardName         string
	cpuMilli, memMiB int64
	qos              string
}

func alike(p pod) alikeKey {
	return alikeKey{cards: p.cards, cardName: p.cardName, cpuMilli: p.row.cpuMilli, memMiB: p.row.memMiB, qos: p.row.qos}
}

// formGangs makes gangs, which the source has none of: each whole-card pod
// not yet in a gang, in creation order, starts one with chance o.Gangs and
// takes the next alike pods created within o.GangWindow of it, up to a size
// drawn uniformly in [2, o.MaxGangSize]. A gang of one stays a plain pod; a
// gang is elastic (min = half its pods, rounded up) with chance o.Elastic.
// Units come in the creation order of their first pods.
func formGangs(pods []pod, o Options, rng *rand.Rand) []unit {
	taken := make([]bool, len(pods))
	window := int64(o.GangWindow / time.Second)
	var out []unit
	for i, p := range pods {
		if taken[i] {
			continue
		}
		taken[i] = true
		u := unit{members: []int{i}, min: 1}
		if p.replicas == 1 && rng.Float64() < o.Gangs {
			size := 2 + rng.IntN(o.MaxGangSize-1)
			key := alike(p)
			for j := i + 1; j < len(pods) && len(u.members) < size && pods[j].row.created <= p.row.created+window; j++ {
				if !taken[j] && pods[j].replicas == 1 && alike(pods[j]) == key {
					taken[j] = true
					u.members = append(u.members, j)
				}
			}
			u.min = len(u.members)
			if len(u.members) > 1 && rng.Float64() < o.Elastic {
				u.min = (len(u.members) + 1) / 2
			}
		}
		out = append(out, u)
	}
	return out
}
