package workload

import "testing"

func TestQueueName(t *testing.T) {
	l := func(q string) map[string]string { return map[string]string{"cardinal.dev/queue": q} }
	tests := []struct {
		name        string
		pg, pod, ns map[string]string
		want        string
	}{
		{"podgroup wins", l("pg"), l("pod"), l("ns"), "pg"},
		{"pod before namespace", nil, l("pod"), l("ns"), "pod"},
		{"namespace", map[string]string{}, nil, l("ns"), "ns"},
		{"default", nil, nil, nil, "default"},
		{"empty label is no label", l(""), l(""), nil, "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := QueueName(tc.pg, tc.pod, tc.ns, "default"); got != tc.want {
				t.Errorf("QueueName = %q, want %q", got, tc.want)
			}
		})
	}
}
