package quota

import (
	"math"
	"math/bits"

	corev1 "k8s.io/api/core/v1"
)

// QueueShare is what the deserved share of one queue is computed from.
type QueueShare struct {
	Name       string
	Weight     int32
	Guarantee  Resources
	Capability Resources // a resource left out is not capped
	// Request is what the queue asks for: allocated plus pending.
	Request Resources
}

// Deserved computes each queue's fair share of total, per resource, the way
// Volcano's proportion plugin does: every queue first gets its guarantee;
// what is left is shared by weight among the queues that still want more,
// each capped by its capability and by what it asks for; a queue that hits
// its cap drops out and its unused share is shared again, until nothing
// changes (water-filling). The result is keyed by queue name.
func Deserved(total Resources, queues []QueueShare) map[string]Resources {
	out := make(map[string]Resources, len(queues))
	for _, q := range queues {
		out[q.Name] = Resources{}
	}
	names := map[corev1.ResourceName]bool{}
	for name := range total {
		names[name] = true
	}
	for _, q := range queues {
		for name := range q.Guarantee {
			names[name] = true
		}
	}
	for name := range names {
		fill(name, total[name], queues, out)
	}
	return out
}

func fill(name corev1.ResourceName, total int64, queues []QueueShare, out map[string]Resources) {
	deserved := make([]int64, len(queues))
	upper := make([]int64, len(queues))
	remaining := total
	for i, q := range queues {
		upper[i] = max(q.Request[name], q.Guarantee[name])
		if c, ok := q.Capability[name]; ok {
			upper[i] = min(upper[i], c)
		}
		deserved[i] = max(q.Guarantee[name], 0)
		remaining = subSat(remaining, deserved[i])
	}
	for remaining > 0 {
		var weight int64
		for i, q := range queues {
			if deserved[i] < upper[i] {
				weight += int64(max(q.Weight, 1))
			}
		}
		if weight == 0 {
			break
		}
		given := int64(0)
		for i, q := range queues {
			if deserved[i] >= upper[i] {
				continue
			}
			share := mulDiv(remaining, int64(max(q.Weight, 1)), weight)
			if share == 0 {
				share = 1 // hand out what rounding leaves, a unit at a time
			}
			share = min(share, upper[i]-deserved[i], remaining-given)
			deserved[i] += share
			given += share
			if given == remaining {
				break
			}
		}
		if given == 0 {
			break
		}
		remaining -= given
	}
	for i, q := range queues {
		if deserved[i] > 0 {
			out[q.Name][name] = deserved[i]
		}
	}
}

// mulDiv is a*b/c without overflow, for 0 <= a, 0 < b <= c: the product is
// taken in 128 bits, and the quotient, at most a, fits.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// subSat is a-b for b >= 0, stopping at the smallest int64 rather than
// wrapping round: guarantees that add up past what int64 holds leave
// nothing to share.
func subSat(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
