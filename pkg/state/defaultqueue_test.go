package state

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	"cardinal.dev/cardinal/pkg/generated/clientset/versioned/fake"
)

// TestDefaultQueueRetried: a kube-apiserver that fails to answer at
// start-up does not leave the scheduler without its default queue: the
// state tries again until it is made.
func TestDefaultQueueRetried(t *testing.T) {
	defer func(b wait.Backoff) { defaultQueueBackoff = b }(defaultQueueBackoff)
	defaultQueueBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 100}
	cc := fake.NewSimpleClientset()
	failures := 3
	cc.PrependReactor("get", "queues", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewInternalError(context.DeadlineExceeded)
	})
	s, _ := newTestState()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ensureQueue(ctx, cc, s.settings.DefaultQueue); err == nil {
		t.Fatal("the first attempt succeeded; the test needs it to fail")
	}
	s.retryDefaultQueue(ctx, cc)
	if _, err := cc.SchedulingV1alpha1().Queues().Get(ctx, s.settings.DefaultQueue, metav1.GetOptions{}); err != nil {
		t.Fatalf("the default queue was not made after the API came back: %v", err)
	}
}
