package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/test/builder"
)

func TestClassifier(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	depIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ctrlRef := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
	}
	_ = depIndexer.Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"cardinal.dev/preemptibility": "non-preemptible"}}})
	_ = indexer.Add(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", OwnerReferences: ctrlRef("Deployment", "web")}})
	owners := Owners{ReplicaSets: appslisters.NewReplicaSetLister(indexer), Deployments: appslisters.NewDeploymentLister(depIndexer)}

	pod := func(prio int32, labels map[string]string, owner []metav1.OwnerReference) *corev1.Pod {
		p := builder.MakePod("ns", "p").Obj()
		p.Spec.Priority = &prio
		for k, v := range labels {
			p.Labels[k] = v
		}
		p.OwnerReferences = owner
		return p
	}
	lbl := func(v string) map[string]string { return map[string]string{"cardinal.dev/preemptibility": v} }
	tests := []struct {
		name        string
		pod         *corev1.Pod
		pg          map[string]string
		want        Preemptibility
		wantWarning bool
	}{
		{"low priority is preemptible", pod(50, nil, nil), nil, Preemptible, false},
		{"at the threshold is not", pod(100, nil, nil), nil, NonPreemptible, false},
		{"PodGroup label first", pod(0, lbl("preemptible"), nil), lbl("semi-preemptible"), SemiPreemptible, false},
		{"top-level owner before pod", pod(0, lbl("preemptible"), ctrlRef("ReplicaSet", "web-1")), nil, NonPreemptible, false},
		{"pod label", pod(1000, lbl("preemptible"), nil), nil, Preemptible, false},
		{"invalid falls back to priority with a warning", pod(1000, lbl("sometimes"), nil), nil, NonPreemptible, true},
		{"unknown owner: pod label", pod(0, lbl("non-preemptible"), ctrlRef("ReplicaSet", "gone")), nil, NonPreemptible, false},
		{"another project's kind of the same name is not read", pod(0, lbl("preemptible"),
			[]metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)}}), nil, Preemptible, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warning := Classify(tc.pod, tc.pg, owners.Labels(tc.pod), 100)
			if got != tc.want || (warning != "") != tc.wantWarning {
				t.Errorf("Of = %q, warning %q; want %q, warning %v", got, warning, tc.want, tc.wantWarning)
			}
		})
	}
	if got, _ := Classify(pod(50, nil, nil), nil, nil, 10); got != NonPreemptible {
		t.Errorf("with threshold 10, priority 50 is %q, want non-preemptible", got)
	}
}
