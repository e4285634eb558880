package convert

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBadInputNamesLineAndColumn(t *testing.T) {
	goodNodes := makeNodes().Add("T4", 2, 2, 104000, 524288).CSV()
	goodPods := podsCSV(makePod("openb-pod-0001"), makePod("openb-pod-0002"))
	header := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	ok := "openb-pod-0001,4000,16384,1,1000,,LS,Running,0,600,0\n"
	tests := []struct {
		name        string
		nodes, pods string
		want        InputError
	}{{
		name:  "missing column",
		nodes: goodNodes,
		pods:  strings.Replace(header, ",qos", "", 1) + "openb-pod-0001,4000,16384,1,1000,,Running,0,600,0\n",
		want:  InputError{File: "pods CSV", Line: 1, Column: "qos"},
	}, {
		name:  "missing node column",
		nodes: "sn,cpu_milli,memory_mib,model\nn1,1000,1024,T4\n",
		pods:  goodPods,
		want:  InputError{File: "nodes CSV", Line: 1, Column: "gpu"},
	}, {
		name:  "not a number",
		nodes: goodNodes,
		pods:  header + ok + "openb-pod-0002,12x,16384,1,1000,,LS,Running,0,600,0\n",
		want:  InputError{File: "pods CSV", Line: 3, Column: "cpu_milli", Value: "12x"},
	}, {
		name:  "negative gpu",
		nodes: goodNodes,
		pods:  header + "openb-pod-0001,4000,16384,-1,1000,,LS,Running,0,600,0\n",
		want:  InputError{File: "pods CSV", Line: 2, Column: "num_gpu", Value: "-1"},
	}, {
		name:  "negative node gpu",
		nodes: "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,2,T4\nn2,1000,1024,-2,T4\n",
		pods:  goodPods,
		want:  InputError{File: "nodes CSV", Line: 3, Column: "gpu", Value: "-2"},
	}, {
		name:  "empty time",
		nodes: goodNodes,
		pods:  header + "openb-pod-0001,4000,16384,1,1000,,LS,Running,,600,0\n",
		want:  InputError{File: "pods CSV", Line: 2, Column: "creation_time"},
	}, {
		name:  "gpu share out of range",
		nodes: goodNodes,
		pods:  header + "openb-pod-0001,4000,16384,1,1500,,LS,Running,0,600,0\n",
		want:  InputError{File: "pods CSV", Line: 2, Column: "gpu_milli", Value: "1500"},
	}, {
		name:  "unknown qos",
		nodes: goodNodes,
		pods:  header + ok + "openb-pod-0002,4000,16384,1,1000,,Gold,Running,0,600,0\n",
		want:  InputError{File: "pods CSV", Line: 3, Column: "qos", Value: "Gold"},
	}, {
		name:  "pod named twice",
		nodes: goodNodes,
		pods:  header + ok + ok,
		want:  InputError{File: "pods CSV", Line: 3, Column: "name", Value: "openb-pod-0001"},
	}, {
		name:  "short row",
		nodes: goodNodes,
		pods:  header + ok + "openb-pod-0002,4000\n",
		want:  InputError{File: "pods CSV", Line: 3},
	}, {
		name:  "node with cards and no model",
		nodes: "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,2,\n",
		pods:  goodPods,
		want:  InputError{File: "nodes CSV", Line: 2, Column: "model"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Convert(strings.NewReader(tt.nodes), strings.NewReader(tt.pods), DefaultOptions())
			var got InputError
			if !errors.As(err, &got) {
				t.Fatalf("error %v, want an InputError", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".Problem" || (p.Last().String() == ".Value" && tt.want.Value == "")
			}, cmp.Ignore())); diff != "" {
				t.Errorf("error %q (-want +got):\n%s", err, diff)
			}
			for _, s := range []string{"line", tt.want.Column} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestUnknownCardMemoryIsAnError(t *testing.T) {
	nodes := makeNodes().Add("H20", 1, 8, 96000, 524288).CSV()
	_, err := Convert(strings.NewReader(nodes), strings.NewReader(podsCSV(makePod("p-1"))), DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "--card-memory H20=") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v, want one naming line 2 and --card-memory H20=", err)
	}
}
