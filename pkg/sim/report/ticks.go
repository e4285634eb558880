package report

import (
	"math"

	"gonum.org/v1/plot"
)

// niceTicks labels a linear axis about every (max-min)/labels at a round
// step (1, 2, 2.5 or 5 times a power of ten), with an unlabelled tick
// between labels. gonum's DefaultTicks aims at three labels, too few to
// read a value off a 900-pixel chart.
type niceTicks struct {
	labels int
	// whole keeps the step at 1 or more, for counts.
	whole bool
}

var _ plot.Ticker = niceTicks{}

// Ticks returns the ticks between min and max.
func (t niceTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(max-min, 0) || t.labels < 1 {
		return nil
	}
	step, prec := niceStep((max - min) / float64(t.labels))
	if t.whole && step < 1 {
		step, prec = 1, 0
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return nil
	}
	first := math.Ceil(min/step) * step
	var ticks []plot.Tick
	if half := first - step/2; half >= min {
		ticks = append(ticks, plot.Tick{Value: half})
	}
	for i := 0; i <= 4*t.labels; i++ {
		v := first + float64(i)*step
		if v > max+step*1e-9 {
			break
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: trimmed(v, prec)})
		if mid := v + step/2; mid <= max && (!t.whole || step >= 2) {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	return ticks
}

// niceStep is the least round step at or above raw, with the decimals its
// labels need.
func niceStep(raw float64) (step float64, prec int) {
	exp := math.Floor(math.Log10(raw))
	mag := math.Pow(10, exp)
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw*(1-1e-9) {
			step = m * mag
			prec = int(max(0, -exp))
			if m == 2.5 {
				prec++
			}
			if m == 10 && prec > 0 {
				prec--
			}
			return step, prec
		}
	}
	return 10 * mag, int(max(0, -exp-1))
}

// durationTicks labels a log axis of trace seconds in the units people
// read durations in: 1 s, 10 s, 1 min, 10 min, 1 h, 10 h, 1 d, 10 d, with
// unlabelled ticks at every whole multiple of each power of ten seconds.
type durationTicks struct{}

var _ plot.Ticker = durationTicks{}

var durationLabels = []struct {
	seconds float64
	label   string
}{
	{0.1, "0.1 s"}, {1, "1 s"}, {10, "10 s"}, {60, "1 min"}, {600, "10 min"}, {3600, "1 h"},
	{36000, "10 h"}, {86400, "1 d"}, {864000, "10 d"}, {8640000, "100 d"},
}

// Ticks returns the ticks between min and max, both above 0.
func (durationTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) || math.IsInf(max, 0) {
		return nil
	}
	var ticks []plot.Tick
	for _, l := range durationLabels {
		if l.seconds >= min && l.seconds <= max {
			ticks = append(ticks, plot.Tick{Value: l.seconds, Label: l.label})
		}
	}
	for decade := math.Pow(10, math.Floor(math.Log10(min))); decade <= max; decade *= 10 {
		for m := 1.0; m < 10; m++ {
			if v := m * decade; v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}
