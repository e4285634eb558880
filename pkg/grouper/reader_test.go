package grouper

import (
	"context"
	"errors"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"cardinal.dev/cardinal/pkg/workload"
)

// TestOwnerLivesWaitsForItsKindToList: just after a start, a workload
// missing from an informer that has not listed yet is not taken as gone
// (its PodGroup would be deleted under running pods); once listed, a
// missing workload, or one made again under another UID, is.
func TestOwnerLivesWaitsForItsKindToList(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", UID: "now"}}
	kube := fake.NewClientset(job)
	f := informers.NewSharedInformerFactory(kube, 0)
	g := &Grouper{reader: newReader(f, kube, nil, nil, workload.Kinds{workload.Job: true})}
	lives := g.ownerLives("ns")
	ref := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID(uid)}
	}

	// A PodGroup claiming an owner of a kind Cardinal does not read (a
	// tenant's forgery) is left alone, at once, with no error to retry.
	cm := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "train", UID: "cm"}
	if ok, err := lives(cm); err != nil || !ok {
		t.Errorf("an owner of a kind not read: lives = %v, %v; want true", ok, err)
	}
	if ok, err := lives(ref("gone", "then")); !errors.Is(err, errNotYet) || ok {
		t.Fatalf("before the Jobs are listed: lives = %v, %v; want an error that it is not read yet", ok, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	for _, tc := range []struct {
		name, uid string
		want      bool
	}{
		{"train", "now", true},
		{"train", "before", false}, // deleted and made again
		{"gone", "then", false},
	} {
		if ok, err := lives(ref(tc.name, tc.uid)); err != nil || ok != tc.want {
			t.Errorf("Job %s (UID %s): lives = %v, %v; want %v", tc.name, tc.uid, ok, err, tc.want)
		}
	}
}
