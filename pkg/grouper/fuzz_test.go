package grouper

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"cardinal.dev/cardinal/pkg/workload"
)

// FuzzPlanFor: whatever a tenant writes in a workload's spec and its
// min-member annotation, planning its gang never panics, and a gang it
// plans has 1 <= min <= max, a name a label can hold, and no negative
// minResources.
func FuzzPlanFor(f *testing.F) {
	f.Add(0, `{"parallelism": 4, "completions": 6}`, "3", `{"succeeded": 4}`)
	f.Add(1, `{"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 3, "completions": 5}}}]}`, "", `{}`)
	f.Add(2, `{"leaderWorkerTemplate": {"size": 4}}`, "9", `{}`)
	f.Add(3, `{"runPolicy": {"schedulingPolicy": {"minAvailable": -3}}, "pytorchReplicaSpecs": {"Worker": {"replicas": 1e12}}}`, "x", `{}`)
	f.Add(4, `{"workerGroupSpecs": [{"replicas": -1, "minReplicas": 5, "numOfHosts": 3}]}`, "", `{}`)
	kinds := []struct{ apiVersion, kind string }{
		{"batch/v1", "Job"}, {"jobset.x-k8s.io/v1alpha2", "JobSet"}, {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"},
		{"kubeflow.org/v1", "PyTorchJob"}, {"ray.io/v1", "RayCluster"}, {"apps/v1", "StatefulSet"},
	}
	all := workload.NewKinds(workload.GroupableKinds...)
	f.Fuzz(func(t *testing.T, kind int, spec, annotation, status string) {
		k := kinds[(kind%len(kinds)+len(kinds))%len(kinds)]
		obj := map[string]any{}
		if json.Unmarshal([]byte(spec), &obj) != nil {
			return
		}
		st := map[string]any{}
		_ = json.Unmarshal([]byte(status), &st)
		w := mk(k.apiVersion, k.kind, "w", obj)
		w.u.Object["status"] = st
		if annotation != "" {
			w = w.annotated(minAnn, annotation)
		}
		chain, err := Walk(newFake(w.u), podOf(w, "p"))
		if err != nil {
			t.Fatal(err)
		}
		plan, _ := PlanFor(chain, all, func(*unstructured.Unstructured) []*unstructured.Unstructured { return nil })
		if plan == nil {
			return
		}
		if plan.Min < 1 || plan.Min > plan.Max {
			t.Errorf("min %d, max %d", plan.Min, plan.Max)
		}
		if len(plan.Name) > maxName {
			t.Errorf("name %q longer than a label value", plan.Name)
		}
		for r, q := range plan.MinResources {
			if q.Sign() < 0 {
				t.Errorf("minResources %s = %s", r, q.String())
			}
		}
	})
}
