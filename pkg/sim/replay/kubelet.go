package replay

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientretry "k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// The simulated kubelet's writes, what a node's kubelet reports for the
// pods bound to it, and the simulated Job controller's.
const (
	// markRunning reports a bound pod started.
	markRunning = iota
	// markSucceeded reports its work done.
	markSucceeded
	// finish ends a pod being deleted (evicted): it is deleted at once, as
	// a kubelet does once its containers are gone.
	finish
	// kill stops a pod whose node went away or was re-sliced under it: it
	// is deleted.
	kill
	// create makes a pod of a job: at submit, or replacing one stopped.
	create
	// jobSucceeded counts a job's pods succeeded in its Job's status, as
	// the Job controller does: the grouper reads the completions a Job has
	// left from it, and lowers its gang's min to them (SPEC §7), so the
	// last pods of an elastic gang do not wait for peers that are done.
	jobSucceeded
)

// kubeletWorkers is how many writes run at once: enough that a gang's pods
// start together, few enough not to crowd the scheduler's own writes.
const kubeletWorkers = 8

type podRef struct {
	namespace, name string
	uid             types.UID
}

func ref(p *corev1.Pod) podRef {
	return podRef{namespace: p.Namespace, name: p.Name, uid: p.UID}
}

type action struct {
	kind int
	pod  podRef
	// obj is the pod to create.
	obj *corev1.Pod
	// job and succeeded are the Job, and its pods succeeded, for jobSucceeded.
	job       types.NamespacedName
	succeeded int32
}

// kubelet is the simulated kubelet of every node: a queue of writes that
// never blocks its callers (they hold the cluster's lock) and workers that
// make them.
type kubelet struct {
	client kubernetes.Interface
	mu     sync.Mutex
	queue  []action
	ready  chan struct{}
	// finishing keeps one finish per pod at a time: the informer reports a
	// terminating pod more than once.
	finishing map[types.UID]bool
	// succeeded are the counts of jobSucceeded writes queued, by Job: one
	// write per Job is queued at a time, and writes the newest count.
	succeeded map[types.NamespacedName]int32
	// errors counts writes that failed for good.
	errors int
}

func newKubelet(client kubernetes.Interface) *kubelet {
	return &kubelet{client: client, ready: make(chan struct{}, 1), finishing: map[types.UID]bool{},
		succeeded: map[types.NamespacedName]int32{}}
}

// do queues a write.
func (k *kubelet) do(a action) {
	k.mu.Lock()
	if a.kind == finish || a.kind == kill {
		if k.finishing[a.pod.uid] {
			k.mu.Unlock()
			return
		}
		k.finishing[a.pod.uid] = true
	}
	if a.kind == jobSucceeded {
		_, queued := k.succeeded[a.job]
		k.succeeded[a.job] = max(k.succeeded[a.job], a.succeeded)
		if queued {
			k.mu.Unlock()
			return
		}
	}
	k.queue = append(k.queue, a)
	k.mu.Unlock()
	select {
	case k.ready <- struct{}{}:
	default:
	}
}

func (k *kubelet) next() (action, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.queue) == 0 {
		return action{}, false
	}
	a := k.queue[0]
	k.queue[0] = action{}
	k.queue = k.queue[1:]
	if len(k.queue) > 0 {
		select {
		case k.ready <- struct{}{}:
		default:
		}
	}
	return a, true
}

// run makes the writes until ctx ends.
func (k *kubelet) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range kubeletWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				a, ok := k.next()
				if !ok {
					select {
					case <-ctx.Done():
						return
					case <-k.ready:
						continue
					}
				}
				if err := k.write(ctx, a); err != nil && ctx.Err() == nil {
					k.mu.Lock()
					k.errors++
					k.mu.Unlock()
					klog.V(2).InfoS("Simulated kubelet write failed", "pod", klog.KRef(a.pod.namespace, a.pod.name), "err", err)
				}
			}
		}()
	}
	wg.Wait()
}

// write makes one action's writes, retrying what the apiserver turned away
// for load.
func (k *kubelet) write(ctx context.Context, a action) error {
	pods := k.client.CoreV1().Pods(a.pod.namespace)
	patch := func(status map[string]any) error {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": a.pod.uid}, "status": status})
		return retry(ctx, func() error {
			_, err := pods.Patch(ctx, a.pod.name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
			return err
		})
	}
	switch a.kind {
	case markRunning:
		return ignoreGone(patch(map[string]any{"phase": corev1.PodRunning, "startTime": metav1.Now()}))
	case markSucceeded:
		return ignoreGone(patch(map[string]any{"phase": corev1.PodSucceeded}))
	case jobSucceeded:
		k.mu.Lock()
		n, ok := k.succeeded[a.job]
		delete(k.succeeded, a.job)
		k.mu.Unlock()
		if !ok {
			n = a.succeeded
		}
		return k.countSucceeded(ctx, a.job, n)
	case create:
		return retry(ctx, func() error {
			_, err := k.client.CoreV1().Pods(a.obj.Namespace).Create(ctx, a.obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	return ignoreGone(retry(ctx, func() error {
		return pods.Delete(ctx, a.pod.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &a.pod.uid}})
	}))
}

// countSucceeded raises a Job's status.succeeded to n: never lowers it, as
// a second write for the Job, queued while the first was made, may land
// first.
func (k *kubelet) countSucceeded(ctx context.Context, job types.NamespacedName, n int32) error {
	jobs := k.client.BatchV1().Jobs(job.Namespace)
	err := retry(ctx, func() error {
		return clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
			j, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil || j.Status.Succeeded >= n {
				return err
			}
			j.Status.Succeeded = n
			_, err = jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{})
			return err
		})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// retry retries a write the apiserver turned away for load or timed out.
func retry(ctx context.Context, f func() error) error {
	var err error
	for i := range 10 {
		if err = f(); err == nil || !(apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsInternalError(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(i+1) * 100 * time.Millisecond):
		}
	}
	return err
}
