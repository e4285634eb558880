package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// none stands for a number that is not there (never reached, not run).
const none = "—"

// traceTime shows trace seconds in the unit a person reads them in:
// seconds, minutes, hours or days.
func traceTime(sec float64) string {
	switch {
	case math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 0:
		return none
	case sec < 10:
		return trimmed(sec, 1) + " s"
	case sec < 120:
		return trimmed(sec, 0) + " s"
	case sec < 2*3600:
		return trimmed(sec/60, 1) + " min"
	case sec < 48*3600:
		return trimmed(sec/3600, 1) + " h"
	default:
		return trimmed(sec/86400, 1) + " d"
	}
}

// wallTime shows wall seconds, down to milliseconds for a scheduling
// attempt.
func wallTime(sec float64) string {
	switch {
	case math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 0:
		return none
	case sec < 1:
		return trimmed(sec*1000, 1) + " ms"
	case sec < 120:
		return trimmed(sec, 1) + " s"
	case sec < 2*3600:
		return trimmed(sec/60, 1) + " min"
	default:
		return trimmed(sec/3600, 1) + " h"
	}
}

// percent shows a share (0.95) as a percentage (95 %).
func percent(share float64) string {
	if math.IsNaN(share) || math.IsInf(share, 0) || share < 0 {
		return none
	}
	return trimmed(share*100, 1) + " %"
}

// decimal shows a number with up to prec decimals.
func decimal(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return none
	}
	return trimmed(v, prec)
}

// general shows a number of any size with four significant digits.
func general(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return none
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// trimmed formats v with prec decimals and drops a trailing ".0".
func trimmed(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// rangeText shows an expected range: "0.8 to 1", "at least 0.8", "at most
// 5", or "any".
func rangeText(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return general(*lo) + " to " + general(*hi)
	case lo != nil:
		return "at least " + general(*lo)
	case hi != nil:
		return "at most " + general(*hi)
	default:
		return "any"
	}
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// plural is "1 job" or "3 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// list joins names as prose, naming at most limit of them.
func list(names []string, limit int) string {
	if len(names) > limit {
		rest := len(names) - limit
		return strings.Join(names[:limit], ", ") + " and " + plural(rest, "other", "others")
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	default:
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
}
