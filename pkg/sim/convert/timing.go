package convert

import (
	"math"
	"slices"
	"time"
)

// clip bounds d to [lo, hi]; side is -1 when d was raised to lo, +1 when
// cut to hi, else 0.
func clip(d, lo, hi time.Duration) (_ time.Duration, side int) {
	switch {
	case d < lo:
		return lo, -1
	case d > hi:
		return hi, +1
	}
	return d, 0
}

// arrivals turns creation times (seconds, in creation order) into submit
// times that keep their order and the shape of their gaps but span span:
// each gap is capped at the gaps' 99th percentile, so one long lull does
// not stretch the rest to nothing, then all are scaled alike. Submits are
// rounded to whole seconds; the last is span rounded. gapCap is the cap.
func arrivals(created []int64, span time.Duration) (submits []time.Duration, gapCap int64) {
	submits = make([]time.Duration, len(created))
	if len(created) < 2 {
		return submits, 0
	}
	gaps := make([]int64, len(created)-1)
	for i := range gaps {
		gaps[i] = max(created[i+1]-created[i], 0)
	}
	sorted := slices.Sorted(slices.Values(gaps))
	gapCap = sorted[int(math.Ceil(0.99*float64(len(sorted))))-1] // nearest rank
	var total int64
	for i := range gaps {
		gaps[i] = min(gaps[i], gapCap)
		total += gaps[i]
	}
	if total == 0 {
		return submits, gapCap
	}
	scale := span.Seconds() / float64(total)
	var sum int64
	for i, g := range gaps {
		sum += g
		submits[i+1] = time.Duration(math.Round(float64(sum)*scale)) * time.Second
	}
	return submits, gapCap
}

// arrivalSpan is S = W / (load × C): how long arrivals take for the work
// offered, W card-seconds, to be load times what C cards can do meanwhile.
func arrivalSpan(cardSeconds float64, cards int, load float64) time.Duration {
	if cards == 0 {
		return 0
	}
	return time.Duration(cardSeconds / (load * float64(cards)) * float64(time.Second))
}
