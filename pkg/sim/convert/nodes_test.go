package convert

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"cardinal.dev/cardinal/pkg/sim/trace"
)

func TestNodeGrouping(t *testing.T) {
	nodes := makeNodes().
		Add("T4", 3, 2, 104000, 524288).
		Add("P100", 2, 2, 16000, 122880).
		Add("T4", 1, 4, 96000, 393216).
		Add("P100", 1, 2, 16000, 61440). // differs from the other P100s in memory only
		Add("V100M16", 2, 1, 8500, 32768).
		Add("T4", 2, 2, 104000, 524288). // the first group again, further down the file
		CSV()
	tr := mustConvert(t, nodes, podsCSV(makePod("openb-pod-0001")), opts(nil))
	want := []trace.NodeGroup{
		{Name: "p100-2gpu-16c-61440mi", Count: 1, Model: "P100", Cards: 2, MemoryMiB: 16384, CPU: "16", Memory: "61440Mi"},
		{Name: "p100-2gpu-16c-122880mi", Count: 2, Model: "P100", Cards: 2, MemoryMiB: 16384, CPU: "16", Memory: "122880Mi"},
		{Name: "t4-2gpu-104c", Count: 5, Model: "T4", Cards: 2, MemoryMiB: 15360, CPU: "104", Memory: "524288Mi"},
		{Name: "t4-4gpu-96c", Count: 1, Model: "T4", Cards: 4, MemoryMiB: 15360, CPU: "96", Memory: "393216Mi"},
		{Name: "v100m16-1gpu-8500mc", Count: 2, Model: "V100M16", Cards: 1, MemoryMiB: 16384, CPU: "8500m", Memory: "32768Mi"},
	}
	if diff := cmp.Diff(want, tr.Nodes); diff != "" {
		t.Errorf("node groups (-want +got):\n%s", diff)
	}
}

func TestNamerKeepsNamesUniqueAndShort(t *testing.T) {
	n := namer{}
	long := "g-abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij"
	got := []string{n.unique("p-1"), n.unique("p-1"), n.unique(long), n.unique(long)}
	want := []string{"p-1", "p-1-2", long[:50], long[:48] + "-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}
