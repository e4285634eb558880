package podgroupstatus

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/test/builder"
)

// TestPodChanged: changes of a gang's pods ask for its PodGroup's status
// once, podsSettle after the first; pods of no gang ask for nothing.
func TestPodChanged(t *testing.T) {
	member := func(ns, name, group string) *corev1.Pod {
		return builder.MakePod(ns, name).Label(schedv1alpha1.PodGroupLabel, group).Obj()
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		want []reconcile.Request
	}{
		{"a gang's pods", []*corev1.Pod{member("ns", "a-0", "a"), member("ns", "a-1", "a"), member("ns", "a-0", "a")},
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}}},
		{"two gangs", []*corev1.Pod{member("ns", "a-0", "a"), member("other", "a-0", "a")},
			[]reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}, {NamespacedName: types.NamespacedName{Namespace: "other", Name: "a"}}}},
		{"no gang", []*corev1.Pod{builder.MakePod("ns", "single").Obj()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
				workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clk})
			defer q.ShutDown()
			for _, p := range tt.pods {
				podChanged(p, q)
			}
			if q.Len() != 0 {
				t.Fatalf("%d requests ready before the pods settled", q.Len())
			}
			clk.Step(podsSettle)
			if len(tt.want) > 0 {
				err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					return q.Len() == len(tt.want), nil
				})
				if err != nil {
					t.Fatalf("%d requests ready after podsSettle, want %d", q.Len(), len(tt.want))
				}
			}
			var got []reconcile.Request
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r)
				q.Done(r)
			}
			slices.SortFunc(got, func(a, b reconcile.Request) int { return strings.Compare(a.String(), b.String()) })
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("request %d is %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
