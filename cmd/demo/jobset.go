package main

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// jobSets is the JobSet resource of examples/workload-crds.yaml.
var jobSets = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// playJobSetController does, for the JobSets among objs, what JobSet's own
// controller would: one Job per replica of each replicated Job, named
// <jobset>-<replicatedJob>-<index> and controlled by the JobSet. The Job
// controller makes their pods; Cardinal groups them into one gang per
// JobSet. The demo runs no JobSet operator, as it runs no kubelet.
func playJobSetController(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GetKind() != "JobSet" {
			continue
		}
		js, err := dyn.Resource(jobSets).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		for _, item := range rjs {
			rj, _ := item.(map[string]any)
			name, _, _ := unstructured.NestedString(rj, "name")
			replicas, found, _ := unstructured.NestedInt64(rj, "replicas")
			if !found {
				replicas = 1
			}
			tmpl, _, _ := unstructured.NestedMap(rj, "template")
			for i := range replicas {
				var job batchv1.Job
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &job); err != nil {
					return fmt.Errorf("JobSet %s/%s: replicated Job %s: %w", js.GetNamespace(), js.GetName(), name, err)
				}
				job.Name = fmt.Sprintf("%s-%s-%d", js.GetName(), name, i)
				job.Namespace = js.GetNamespace()
				job.OwnerReferences = []metav1.OwnerReference{{APIVersion: js.GetAPIVersion(), Kind: js.GetKind(), Name: js.GetName(),
					UID: js.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
				if _, err := kube.BatchV1().Jobs(job.Namespace).Create(ctx, &job, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
