package podgroupstatus

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/test/builder"
)

// recorder is a work queue that records what is added, and after what delay.
type recorder struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []delayed
}

func (q *recorder) Add(r reconcile.Request) { q.added = append(q.added, delayed{r, 0}) }

type delayed struct {
	Request reconcile.Request
	After   time.Duration
}

func (q *recorder) AddAfter(r reconcile.Request, d time.Duration) {
	q.added = append(q.added, delayed{r, d})
}

// TestPodChanged: a change of a gang's pod asks for its PodGroup once the
// gang's pods have settled; a pod of no gang asks for nothing.
func TestPodChanged(t *testing.T) {
	member := func(ns, name, group string) *corev1.Pod {
		return builder.MakePod(ns, name).Label(schedv1alpha1.PodGroupLabel, group).Obj()
	}
	later := func(ns, name string) delayed {
		return delayed{reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}, podsSettle}
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		want []delayed
	}{
		{"a gang's pods", []*corev1.Pod{member("ns", "a-0", "a"), member("ns", "a-1", "a")}, []delayed{later("ns", "a"), later("ns", "a")}},
		{"gangs of the same name in two namespaces", []*corev1.Pod{member("ns", "a-0", "a"), member("other", "a-0", "a")}, []delayed{later("ns", "a"), later("other", "a")}},
		{"no gang", []*corev1.Pod{builder.MakePod("ns", "single").Obj()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &recorder{}
			for _, p := range tt.pods {
				podChanged(p, q)
			}
			if diff := cmp.Diff(tt.want, q.added); diff != "" {
				t.Errorf("requests (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestPodGroupChanged: an update of a PodGroup that changed at most what
// the controller writes (its status, its two annotations; a resync
// changes nothing) is asked for once the gang's pods settle, so the echo
// of its own write does not cut that short; any other change at once.
func TestPodGroupChanged(t *testing.T) {
	base := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "1", Generation: 1,
		Labels: map[string]string{"cardinal.dev/queue": "a"}, Annotations: map[string]string{"cardinal.dev/card-request": `{"A":1}`}}}
	tests := []struct {
		name   string
		change func(*schedv1alpha1.PodGroup)
		after  time.Duration
	}{
		{"nothing: a resync", func(*schedv1alpha1.PodGroup) {}, podsSettle},
		{"status", func(pg *schedv1alpha1.PodGroup) { pg.Status.Phase = schedv1alpha1.PodGroupScheduling }, podsSettle},
		{"its annotations", func(pg *schedv1alpha1.PodGroup) {
			pg.Annotations[ScheduledAnnotation], pg.Annotations[WaitingReasonAnnotation] = "1", "waits"
			pg.Annotations[WaitingRefusalAnnotation] = `{"kind":"Loading","value":{}}`
		}, podsSettle},
		{"spec", func(pg *schedv1alpha1.PodGroup) { pg.Generation++ }, 0},
		{"the queue label", func(pg *schedv1alpha1.PodGroup) { pg.Labels["cardinal.dev/queue"] = "b" }, 0},
		{"another annotation", func(pg *schedv1alpha1.PodGroup) { pg.Annotations["cardinal.dev/card-request"] = `{"A":2}` }, 0},
		{"deletion", func(pg *schedv1alpha1.PodGroup) { pg.DeletionTimestamp = &metav1.Time{} }, 0},
		{"deleted and created again", func(pg *schedv1alpha1.PodGroup) { pg.UID = "2" }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tt.change(cur)
			q := &recorder{}
			podGroupChanged(base, cur, q)
			want := []delayed{{reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "g"}}, tt.after}}
			if diff := cmp.Diff(want, q.added); diff != "" {
				t.Errorf("requests (-want, +got):\n%s", diff)
			}
		})
	}
}
