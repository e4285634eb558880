package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/controlplane"
	"cardinal.dev/cardinal/test/builder"
)

const (
	// waitTimeout bounds every wait for something that must happen.
	waitTimeout = 60 * time.Second
	// holdWindow is how long a test watches for something that must not happen.
	holdWindow = 5 * time.Second
	poll       = 100 * time.Millisecond
)

// startScheduler runs cardinal-scheduler with config/scheduler-config.yaml
// for the rest of the test, and prints its log if the test fails.
func startScheduler(t *testing.T, extraArgs ...string) *controlplane.Scheduler {
	t.Helper()
	return startSchedulerWith(t, env.configPath, extraArgs...)
}

// startSchedulerWith is startScheduler with another scheduler configuration.
func startSchedulerWith(t *testing.T, configPath string, extraArgs ...string) *controlplane.Scheduler {
	t.Helper()
	s, err := env.cp.StartScheduler(configPath, extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		log, err := os.ReadFile(s.LogPath)
		if err != nil {
			return
		}
		// Every scheduler here runs as config/'s service account, on
		// exactly the RBAC config/ ships (SPEC §6): nothing it does may be
		// refused for want of a right.
		if line := forbidden(string(log)); line != "" && !cutRights(s) {
			t.Errorf("the scheduler was refused by RBAC; config/rbac lacks a right it uses:\n%s", line)
		}
		if t.Failed() {
			t.Logf("scheduler log (%s):\n%s", s.LogPath, tail(string(log), 200))
		}
	})
	return s
}

// rightsCut are the logs of schedulers a test runs with rights taken away
// on purpose (markRightsCut).
var rightsCut sync.Map

func markRightsCut(s *controlplane.Scheduler) { rightsCut.Store(s.LogPath, true) }

func cutRights(s *controlplane.Scheduler) bool {
	_, ok := rightsCut.Load(s.LogPath)
	return ok
}

// forbidden returns the first line of log where the apiserver refused the
// scheduler's service account for want of an RBAC right.
func forbidden(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `is forbidden: User "`+controlplane.SchedulerUser+`" cannot`) {
			return l
		}
	}
	return ""
}

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// createNamespace makes a namespace for one test and deletes it afterwards.
func createNamespace(t *testing.T, name string) string {
	t.Helper()
	return createNamespaceInQueue(t, name, "")
}

// createGPUNamespace makes a namespace whose pods are in a queue of their
// own, named like it, with quota for as many NVIDIA-H200 cards as a test
// may use: as an administrator sets up a team that uses whole cards.
func createGPUNamespace(t *testing.T, name string) string {
	t.Helper()
	createQueue(t, builder.MakeQueue(name).Card("NVIDIA-H200", 0, 1000).Obj())
	return createNamespaceInQueue(t, name, name)
}

// createNamespaceInQueue makes a namespace labelled with queue (none if "")
// for one test and deletes it afterwards.
func createNamespaceInQueue(t *testing.T, name, queue string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if queue != "" {
		ns.Labels = map[string]string{v1alpha1.QueueLabel: queue}
	}
	if _, err := env.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logEvents(t, name)
		}
		_ = env.kube.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		_ = env.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// logEvents logs a failed test's namespace's events, oldest first, so a
// failure says what the scheduler did and said.
func logEvents(t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, err := env.kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("events in %s: %v", ns, err)
		return
	}
	sort.SliceStable(evs.Items, func(i, j int) bool { return eventTime(evs.Items[i]).Before(eventTime(evs.Items[j])) })
	var b strings.Builder
	for _, e := range evs.Items {
		n := max(int32(1), e.DeprecatedCount)
		if e.Series != nil {
			n = e.Series.Count
		}
		fmt.Fprintf(&b, "%s %s %s/%s x%d: %s\n", eventTime(e).Format("15:04:05.000"), e.Reason, e.Regarding.Kind, e.Regarding.Name, n, e.Note)
	}
	t.Logf("events in %s:\n%s", ns, tail(strings.TrimSuffix(b.String(), "\n"), 80))
}

func eventTime(e eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		return e.DeprecatedLastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func createNodes(t *testing.T, nodes ...*corev1.Node) {
	t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		if _, err := env.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := n.Name
		t.Cleanup(func() {
			err := env.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		})
	}
}

func createPods(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := env.kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// boundWant is what waitBound waits for among a namespace's pods.
type boundWant struct {
	// names must all be bound (terminating or not).
	names []string
	// count, unless negative, is how many live pods must be bound.
	count int
	// perGang, unless nil, is how many pods (terminating too) must be
	// bound per gang, exactly, no other gang with any.
	perGang map[string]int
	timeout time.Duration
}

// boundOption says what waitBound waits for, or for how long.
type boundOption func(*boundWant)

// podsNamed: these pods are all bound.
func podsNamed(names ...string) boundOption {
	return func(w *boundWant) { w.names = append(w.names, names...) }
}

// boundCount: exactly n live pods are bound.
func boundCount(n int) boundOption { return func(w *boundWant) { w.count = n } }

// gangsBound: exactly want pods are bound per gang.
func gangsBound(want map[string]int) boundOption { return func(w *boundWant) { w.perGang = want } }

// within: wait d rather than waitTimeout.
func within(d time.Duration) boundOption { return func(w *boundWant) { w.timeout = d } }

// placed are where a namespace's bound pods are, by name: live ones, and
// named ones even if terminating.
type placed map[string]string

// names are the pods in p, sorted.
func (p placed) names() []string { return slices.Sorted(maps.Keys(p)) }

// waitBound waits until the pods of ns are bound as opts say, and returns
// where they are. It is the one way tests wait for binding.
func waitBound(t *testing.T, ns string, opts ...boundOption) placed {
	t.Helper()
	want := boundWant{count: -1, timeout: waitTimeout}
	for _, o := range opts {
		o(&want)
	}
	start := time.Now()
	var got placed
	var live int
	var perGang map[string]int
	err := wait.PollUntilContextTimeout(context.Background(), poll, want.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got, live, perGang = placed{}, 0, map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			perGang[p.Labels[schedv1alpha1.PodGroupLabel]]++
			if p.DeletionTimestamp == nil {
				live++
				got[p.Name] = p.Spec.NodeName
			} else if slices.Contains(want.names, p.Name) {
				got[p.Name] = p.Spec.NodeName
			}
		}
		for _, n := range want.names {
			if got[n] == "" {
				return false, nil
			}
		}
		return (want.count < 0 || live == want.count) && (want.perGang == nil || equalCounts(perGang, want.perGang)), nil
	})
	if err != nil {
		t.Fatalf("pods of %s not bound as wanted within %v (pods %v, %d live pods, per gang %v): bound %v, %d live, per gang %v: %v",
			ns, want.timeout, want.names, want.count, want.perGang, got, live, perGang, err)
	}
	t.Logf("pods of %s bound as wanted after %v", ns, time.Since(start).Round(10*time.Millisecond))
	return got
}

// holdFor checks, at every poll over window, that check passes: the way a
// test asserts that something does not happen.
func holdFor(t *testing.T, window time.Duration, check func() error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), poll, window, true, func(context.Context) (bool, error) {
		return false, check()
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatal(err)
	}
}

// neverBound checks that none of the named pods is bound, over the whole hold window.
func neverBound(t *testing.T, ns string, names ...string) {
	t.Helper()
	holdFor(t, holdWindow, func() error {
		for _, n := range names {
			p, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Spec.NodeName != "" {
				return fmt.Errorf("pod %s/%s was bound to %s; it must stay Pending", ns, n, p.Spec.NodeName)
			}
		}
		return nil
	})
}

func resourceQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
