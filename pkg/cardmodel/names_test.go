package cardmodel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

func TestParseNames(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "NVIDIA-H200", want: []string{"NVIDIA-H200"}},
		{in: "NVIDIA-GeForce-RTX-4090|NVIDIA-GeForce-RTX-4090-D", want: []string{"NVIDIA-GeForce-RTX-4090", "NVIDIA-GeForce-RTX-4090-D"}},
		{in: " A | B ", want: []string{"A", "B"}},
		{in: "NVIDIA-L40S/mps-45g*1/4", want: []string{"NVIDIA-L40S/mps-45g*1/4"}},
		{in: "", wantErr: "no card model given"},
		{in: "A||B", wantErr: "alternative 2"},
		{in: "A|", wantErr: "alternative 2"},
		{in: "A|A", wantErr: "listed twice"},
		{in: "NVIDIA H200", wantErr: "whitespace"},
		{in: strings.Repeat("x", 300), wantErr: "longer than 253"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseNames(tt.in)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseNames(%q) (-want, +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSameResource(t *testing.T) {
	tests := []struct {
		models  []string
		wantErr string
	}{
		{models: []string{"NVIDIA-GeForce-RTX-4090", "NVIDIA-GeForce-RTX-4090-D"}},
		{models: []string{"NVIDIA-H200/mig-1g.18gb-mixed", "NVIDIA-H100/mig-1g.18gb-mixed"}},
		{models: []string{"NVIDIA-H200", "NVIDIA-H200/mig-1g.18gb-mixed"}, wantErr: "need different resources (whole cards and nvidia.com/mig-1g.18gb)"},
		{models: []string{"NVIDIA-H200/mig-1g.18gb-mixed", "NVIDIA-H200/mig-2g.35gb-mixed"}, wantErr: "nvidia.com/mig-1g.18gb and nvidia.com/mig-2g.35gb"},
		{models: []string{"NVIDIA-L40S/mps-45g*1/4", "NVIDIA-L40S"}, wantErr: "nvidia.com/gpu.shared and whole cards"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.models, "|"), func(t *testing.T) {
			checkErr(t, SameResource(tt.models), tt.wantErr)
		})
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		model    string
		resource corev1.ResourceName
		want     bool
	}{
		{"NVIDIA-H200", "nvidia.com/gpu", true},
		{"NVIDIA-H200", "nvidia.com/mig-1g.18gb", false},
		{"NVIDIA-H200/mig-1g.18gb-mixed", "nvidia.com/mig-1g.18gb", true},
		{"NVIDIA-H200/mig-1g.18gb-mixed", "nvidia.com/gpu", false},
		{"NVIDIA-L40S/mps-45g*1/4", MPSResource, true},
		{"NVIDIA-L40S/mps-45g*1/4", "nvidia.com/gpu", false},
	}
	for _, tt := range tests {
		if got := Matches(tt.model, tt.resource); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.model, tt.resource, got, tt.want)
		}
	}
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		in      string
		want    []Request
		wantErr string
	}{
		{in: `{"NVIDIA-H200":2}`, want: []Request{{Models: []string{"NVIDIA-H200"}, Count: 2}}},
		{in: `{"NVIDIA-GeForce-RTX-4090|NVIDIA-GeForce-RTX-4090-D":2,"NVIDIA-H200":1,"X":0}`, want: []Request{
			{Models: []string{"NVIDIA-GeForce-RTX-4090", "NVIDIA-GeForce-RTX-4090-D"}, Count: 2},
			{Models: []string{"NVIDIA-H200"}, Count: 1},
		}},
		{in: `{}`, want: []Request{}},
		{in: `{"NVIDIA-H200":1.5}`, wantErr: "not a whole number"},
		{in: `{"NVIDIA-H200":-1}`, wantErr: "not a whole number"},
		{in: `{"NVIDIA-H200":"2"}`, wantErr: "not a whole number"},
		{in: `["NVIDIA-H200"]`, wantErr: "want a JSON object"},
		{in: `null`, wantErr: "got null"},
		{in: `{"A":1} {"B":1}`, wantErr: "got more after it"},
		{in: `{"A||B":1}`, wantErr: "alternative 2"},
		{in: `{"NVIDIA-H200|NVIDIA-H200/mig-1g.18gb-mixed":1}`, wantErr: "need different resources"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRequest(tt.in)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRequest(%q) (-want, +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestQueueCards(t *testing.T) {
	withAnnotation := func(q *v1alpha1.Queue, v string) *v1alpha1.Queue {
		q.ObjectMeta = metav1.ObjectMeta{Name: q.Name, Annotations: map[string]string{v1alpha1.VolcanoCardQuotaAnnotation: v}}
		return q
	}
	tests := []struct {
		name    string
		queue   *v1alpha1.Queue
		want    map[string]Quota
		wantErr string
	}{
		{
			name:  "spec cards, capability defaults to guarantee",
			queue: builder.MakeQueue("a").Card("NVIDIA-H200", 3, 6).Obj(),
			want:  map[string]Quota{"NVIDIA-H200": {3, 6}},
		},
		{
			name:  "volcano annotation for models spec.cards does not list",
			queue: withAnnotation(builder.MakeQueue("a").Card("NVIDIA-H200", 3, 6).Obj(), `{"NVIDIA-H200":1,"NVIDIA-A100":2}`),
			want:  map[string]Quota{"NVIDIA-H200": {3, 6}, "NVIDIA-A100": {2, 2}},
		},
		{
			name:    "bad annotation keeps spec.cards",
			queue:   withAnnotation(builder.MakeQueue("a").Card("NVIDIA-H200", 3, 6).Obj(), `{"NVIDIA-A100":"x"}`),
			want:    map[string]Quota{"NVIDIA-H200": {3, 6}},
			wantErr: "queue a: annotation volcano.sh/card.quota is ignored",
		},
		{
			name:    "alternatives are not a model",
			queue:   withAnnotation(builder.MakeQueue("a").Obj(), `{"A|B":1}`),
			want:    map[string]Quota{},
			wantErr: "is not one card model",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := QueueCards(tt.queue)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("QueueCards (-want, +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}
