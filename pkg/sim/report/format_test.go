package report

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"trace seconds", traceTime(42), "42 s"},
		{"trace under ten seconds", traceTime(2.25), "2.2 s"},
		{"trace minutes", traceTime(600), "10 min"},
		{"trace hours", traceTime(5400 * 2), "3 h"},
		{"trace days", traceTime(3 * 86400), "3 d"},
		{"trace never reached", traceTime(-1), none},
		{"trace NaN", traceTime(math.NaN()), none},
		{"wall milliseconds", wallTime(0.0042), "4.2 ms"},
		{"wall seconds", wallTime(12.34), "12.3 s"},
		{"wall minutes", wallTime(390), "6.5 min"},
		{"percent", percent(0.875), "87.5 %"},
		{"percent whole", percent(1), "100 %"},
		{"first choice none", firstChoice(-1), "none named"},
		{"range both", rangeText(ptr(0.8), ptr(1)), "0.8 to 1"},
		{"range low", rangeText(ptr(0.8), nil), "at least 0.8"},
		{"range high", rangeText(nil, ptr(5)), "at most 5"},
		{"range open", rangeText(nil, nil), "any"},
		{"cell pipe", cell("A|B"), `A\|B`},
		{"list two", list([]string{"a", "b"}, 10), "a and b"},
		{"list over limit", list([]string{"a", "b", "c", "d"}, 2), "a, b and 2 others"},
		{"list one over limit", list([]string{"a", "b", "c"}, 2), "a, b and 1 other"},
		{"shorten short", shorten("cardinal", 36), "cardinal"},
		{"shorten long", shorten("a-very-long-scheduler-name", 10), "a-very-lo…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}
