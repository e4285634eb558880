package cardquota

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/statetest"
)

var benchModels = []string{"NVIDIA-H200", "NVIDIA-H800", rtx, rtxD}

// BenchmarkFilterReserve times one Filter and one Reserve (the state's
// charge, as the plugins' Reserve makes it) of a one-card pod,
// with 10, 100 and 1000 queues each holding pods of every model: the cost
// must not grow with the number of queues. It reports the p99 of single
// calls beside the mean; `make bench` quotes both.
func BenchmarkFilterReserve(b *testing.B) {
	for _, queues := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			st := statetest.New()
			var nodes []fwk.NodeInfo
			for i := range 100 {
				n := builder.MakeNode(fmt.Sprintf("n%d", i)).GPU(benchModels[i%len(benchModels)], 8).Obj()
				st.OnNode(n)
				ni := framework.NewNodeInfo()
				ni.SetNode(n)
				nodes = append(nodes, ni)
			}
			for q := range queues {
				mq := builder.MakeQueue(fmt.Sprintf("q%d", q))
				for _, m := range benchModels {
					mq.Card(m, 0, 1000)
				}
				st.OnQueue(mq.Obj())
				for i := range 4 { // placed pods of every queue, one per model
					p := builder.MakePod("ns", fmt.Sprintf("q%d-%d", q, i)).Label(v1alpha1.QueueLabel, fmt.Sprintf("q%d", q)).GPU(1).Obj()
					p.UID = types.UID(p.Name)
					p.Spec.NodeName = fmt.Sprintf("n%d", i)
					st.OnPod(p)
				}
			}
			pl := &Plugin{state: st}
			pod := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "q0").GPU(1).Obj()
			pod.UID = "p"
			cs := framework.NewCycleState()
			cs.Write(stateKey, &stateData{queue: "q0", requests: newCardRequests(map[corev1.ResourceName]int64{builder.GPUResource: 1}), names: benchModels, cards: st.Cards("q0")})
			ctx := context.Background()
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				ni := nodes[i%len(nodes)]
				start := time.Now()
				if st := pl.Filter(ctx, cs, pod, ni); !st.IsSuccess() {
					b.Fatal(st)
				}
				if st := st.Reserve(pod, ni.Node().Name); st != nil {
					b.Fatal(st)
				}
				durations = append(durations, time.Since(start))
				st.Unreserve(pod)
			}
			b.StopTimer()
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkCycle times what the plugin adds to one scheduling cycle of a
// one-card pod that names all four models, over 1000 nodes of which every
// fourth is full: PreFilter, Filter on every node, PreScore and Score on
// the nodes that passed. It reports the cost per node looked at, the
// number Filter and Score are judged by.
func BenchmarkCycle(b *testing.B) {
	st := statetest.New(func(s *state.Settings) { s.CardRoomFirst = true })
	var nodes []fwk.NodeInfo
	for i := range 1000 {
		n := builder.MakeNode(fmt.Sprintf("n%d", i)).Res(corev1.ResourceCPU, "64").Res(corev1.ResourceMemory, "512Gi").
			GPU(benchModels[i%len(benchModels)], 8).Obj()
		st.OnNode(n)
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		if i%4 == 0 { // the preferred model's nodes are full
			for j := range 8 {
				p := builder.MakePod("ns", fmt.Sprintf("full-%d-%d", i, j)).GPU(1).Obj()
				p.Spec.NodeName = n.Name
				ni.AddPod(p)
			}
		}
		nodes = append(nodes, ni)
	}
	q := builder.MakeQueue("q0")
	for _, m := range benchModels {
		q.Card(m, 0, 100000)
	}
	st.OnQueue(q.Obj())
	pl := &Plugin{state: st, roomFirst: true}
	pod := builder.MakePod("ns", "p").Label(v1alpha1.QueueLabel, "q0").GPU(1).CardName(strings.Join(benchModels, "|")).Obj()
	pod.UID = "p"
	ctx := context.Background()
	passed := make([]fwk.NodeInfo, 0, len(nodes))
	b.ResetTimer()
	for range b.N {
		cs := framework.NewCycleState()
		if _, st := pl.PreFilter(ctx, cs, pod, nodes); !st.IsSuccess() {
			b.Fatal(st)
		}
		passed = passed[:0]
		for _, ni := range nodes {
			if pl.Filter(ctx, cs, pod, ni).IsSuccess() {
				passed = append(passed, ni)
			}
		}
		if st := pl.PreScore(ctx, cs, pod, passed); !st.IsSuccess() {
			b.Fatal(st)
		}
		for _, ni := range passed {
			if _, st := pl.Score(ctx, cs, pod, ni); !st.IsSuccess() {
				b.Fatal(st)
			}
		}
	}
	b.StopTimer()
	if len(passed) != 750 {
		b.Fatalf("%d nodes passed Filter, want 750", len(passed))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(nodes)), "ns/node")
}
