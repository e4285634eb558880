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

	"cardinal.dev/cardinal/pkg/queuecache"
	"cardinal.dev/cardinal/test/builder"
)

var benchModels = []string{"NVIDIA-H200", "NVIDIA-H800", rtx, rtxD}

// BenchmarkFilterReserve times one Filter and one Reserve (the queue
// cache's charge, as the queue plugin's Reserve makes it) of a one-card pod,
// with 10, 100 and 1000 queues each holding pods of every model: the cost
// must not grow with the number of queues. It reports the p99 of single
// calls beside the mean; `make bench` quotes both.
func BenchmarkFilterReserve(b *testing.B) {
	for _, queues := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			qc := queuecache.New()
			var nodes []fwk.NodeInfo
			for i := range 100 {
				n := builder.MakeNode(fmt.Sprintf("n%d", i)).GPU(benchModels[i%len(benchModels)], 8).Obj()
				qc.UpsertNode(n)
				ni := framework.NewNodeInfo()
				ni.SetNode(n)
				nodes = append(nodes, ni)
			}
			for q := range queues {
				mq := builder.MakeQueue(fmt.Sprintf("q%d", q))
				for _, m := range benchModels {
					mq.Card(m, 0, 1000)
				}
				if err := qc.UpsertQueue(mq.Obj()); err != nil {
					b.Fatal(err)
				}
				for i := range 4 { // placed pods of every queue, one per model
					p := builder.MakePod("ns", fmt.Sprintf("q%d-%d", q, i)).GPU(1).Obj()
					p.UID = types.UID(p.Name)
					qc.AddPodIfAbsent(p, queuecache.PodInfo{Queue: fmt.Sprintf("q%d", q)}, fmt.Sprintf("n%d", i))
				}
			}
			pl := &Plugin{cache: qc}
			pod := builder.MakePod("ns", "p").GPU(1).Obj()
			pod.UID = "p"
			info := queuecache.PodInfo{Queue: "q0"}
			cs := framework.NewCycleState()
			cs.Write(stateKey, &stateData{queue: "q0", requests: map[corev1.ResourceName]int64{builder.GPUResource: 1}, names: benchModels, cards: qc.Cards("q0")})
			ctx := context.Background()
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				ni := nodes[i%len(nodes)]
				start := time.Now()
				if st := pl.Filter(ctx, cs, pod, ni); !st.IsSuccess() {
					b.Fatal(st)
				}
				qc.AddPodIfAbsent(pod, info, ni.Node().Name)
				durations = append(durations, time.Since(start))
				qc.Unplace(pod.UID)
			}
			b.StopTimer()
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
