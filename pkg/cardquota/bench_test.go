package cardquota

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	framework "k8s.io/kubernetes/pkg/scheduler/framework"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/test/builder"
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
			st := state.New(state.DefaultSettings())
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
			cs.Write(stateKey, &stateData{queue: "q0", requests: map[corev1.ResourceName]int64{builder.GPUResource: 1}, names: benchModels, cards: st.Cards("q0")})
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
