package soak

import (
	"fmt"
	"strings"
	"testing"
)

// TestCrashOf: a crashed scheduler's violation carries its panic and
// stack, or else the log's last lines.
func TestCrashOf(t *testing.T) {
	var quiet []string
	for i := range 30 {
		quiet = append(quiet, fmt.Sprintf("I1125 line %d", i))
	}
	tests := []struct {
		name, log     string
		want, wantNot []string
	}{
		{
			name:    "panic",
			log:     "I1125 started\nI1125 synced\npanic: assignment to entry in nil map\n\ngoroutine 7 [running]:\ncardinal.dev/cardinal/pkg/state.(*State).f(...)\n",
			want:    []string{"panic: assignment to entry in nil map", "goroutine 7 [running]", "pkg/state.(*State).f"},
			wantNot: []string{"I1125 started"},
		},
		{
			name:    "fatal error",
			log:     "I1125 started\nfatal error: concurrent map read and map write\n\ngoroutine 9 [running]:\n",
			want:    []string{"fatal error: concurrent map read and map write", "goroutine 9"},
			wantNot: []string{"I1125 started"},
		},
		{
			name:    "no panic: the last 20 lines",
			log:     strings.Join(quiet, "\n") + "\n",
			want:    []string{"I1125 line 10\n", "I1125 line 29"},
			wantNot: []string{"I1125 line 9\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := crashOf(tt.log)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("crashOf lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("crashOf has %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestLostLease: a scheduler that ended because it lost its lease is no
// crash, in the words of kube-scheduler before 1.37 and of 1.37.
func TestLostLease(t *testing.T) {
	for log, want := range map[string]bool{
		`E1125 server.go:330] "leaderelection lost"`:                true,
		`E1126 server.go:337] "Leaderelection lost"`:                true,
		"panic: assignment to entry in nil map\n":                   false,
		`I1126 leaderelection.go:300] "Successfully renewed lease"`: false,
	} {
		if got := lostLease(log); got != want {
			t.Errorf("lostLease(%q) = %v, want %v", log, got, want)
		}
	}
}
