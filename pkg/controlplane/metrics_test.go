package controlplane

import (
	"reflect"
	"testing"
)

func TestSamples(t *testing.T) {
	tests := []struct {
		name, body string
		want       map[string]map[string]float64
	}{
		{name: "empty", body: "", want: map[string]map[string]float64{}},
		{name: "comments and labels", body: "# HELP x y\n# TYPE x gauge\nx{a=\"1\",b=\"2\"} 3\nx{a=\"2\"} 4.5\nplain 7\n",
			want: map[string]map[string]float64{"x": {`{a="1",b="2"}`: 3, `{a="2"}`: 4.5}, "plain": {"": 7}}},
		{name: "a space inside a label value", body: "x{a=\"b c\"} 1\n", want: map[string]map[string]float64{"x": {`{a="b c"}`: 1}}},
		{name: "unreadable lines skipped", body: "x NaNish\nnovalue\ny 2\n", want: map[string]map[string]float64{"y": {"": 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Samples(tc.body); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Samples(%q) = %v, want %v", tc.body, got, tc.want)
			}
		})
	}
}
