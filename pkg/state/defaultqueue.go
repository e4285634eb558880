package state

import (
	"context"
	"fmt"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	cardinalclient "cardinal.dev/cardinal/pkg/generated/clientset/versioned"
)

// defaultQueueBackoff spaces the attempts to create the default queue when
// kube-apiserver fails to answer at start-up: up to its cap, then at the
// cap, for as long as it takes.
var defaultQueueBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}

// retryDefaultQueue creates the default queue, trying again with backoff
// until it exists, the API says it cannot be (no CRD, no right: apis.go
// takes over), or ctx ends.
func (s *State) retryDefaultQueue(ctx context.Context, cc cardinalclient.Interface) {
	b := defaultQueueBackoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.Step()):
		}
		err := ensureQueue(ctx, cc, s.settings.DefaultQueue)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return
		}
	}
}

// ensureQueue creates the default queue if it does not exist, as Volcano
// does, so pods that name no queue run without setup: it has weight 1, no
// guarantee and no cap. A queue an administrator created is left as it is.
func ensureQueue(ctx context.Context, cc cardinalclient.Interface, name string) error {
	_, err := cc.SchedulingV1alpha1().Queues().Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{Weight: 1}}
	if _, err := cc.SchedulingV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default queue %s: %w", name, err)
	}
	return nil
}
