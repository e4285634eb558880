package integration

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// row is one row of SPEC §7's table: a workload made as its users (and,
// for another project's kind, its operator) make it, whose gang Cardinal
// must make by itself.
type row struct {
	name string
	// min and max the gang must have; podGroup its PodGroup's name, kind
	// the kind it is made for.
	min, max       int
	podGroup, kind string
	// make creates the workload in ns with owner, the labels its top-level
	// owner carries, and returns the object the PodGroup is made for.
	make func(t *testing.T, ns string, owner map[string]string) metav1.Object
}

// TestWorkloadsBecomeGangs: for every row of SPEC §7's table, the
// workload's min binds all together or not at all (nothing binds while
// only min-1 fit, over a window), its pods beyond min are elastic (placed
// as preemptible work of a semi-preemptible gang, on capacity added
// later), and its queue and preemptibility come from its top-level owner,
// whose namespace is in no queue. Nobody writes a PodGroup.
func TestWorkloadsBecomeGangs(t *testing.T) {
	installWorkloadCRDs(t)
	startScheduler(t)
	minAnn := func(n int) map[string]string { return map[string]string{v1alpha1.MinMemberAnnotation: fmt.Sprint(n)} }
	rows := []row{
		{name: "job", min: 3, max: 4, podGroup: "train", kind: "Job", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			return createJob(t, ns, "train", 4, 0, gpuTemplate(ns, nil), owner, minAnn(3), nil)
		}},
		{name: "jobset", min: 3, max: 4, podGroup: "sim", kind: "JobSet", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			js := createObject(t, ns, object("jobset.x-k8s.io/v1alpha2", "JobSet", "sim", map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "w", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{"parallelism": int64(2), "template": templateMap(t, tmpl)}},
			}}}, owner, minAnn(3)))
			// What JobSet's controller makes: one Job per replica.
			for i := range 2 {
				createJob(t, ns, fmt.Sprintf("sim-w-%d", i), 2, 0, tmpl, nil, nil, ownerOf(js))
			}
			return js
		}},
		{name: "leaderworkerset", min: 3, max: 3, podGroup: "infer-0", kind: "LeaderWorkerSet", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			lws := createObject(t, ns, object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "infer", map[string]any{
				"replicas": int64(1), "leaderWorkerTemplate": map[string]any{"size": int64(3), "workerTemplate": templateMap(t, tmpl)}}, owner, nil))
			// What LeaderWorkerSet's controller makes: a leader StatefulSet,
			// a leader pod per group, and a worker StatefulSet the leader
			// pod controls.
			group := map[string]string{"leaderworkerset.sigs.k8s.io/group-index": "0"}
			leaders := createStatefulSet(t, ns, "infer", 1, tmpl, nil, nil, ownerOf(lws))
			leader := podOf(ns, "infer-0", tmpl, controlledBy(leaders, "apps/v1", "StatefulSet"), group)
			createPods(t, leader)
			leader, err := env.kube.CoreV1().Pods(ns).Get(context.Background(), "infer-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			workers := createStatefulSet(t, ns, "infer-0", 2, tmpl, nil, nil, controlledBy(leader, "v1", "Pod"))
			createPods(t, podOf(ns, "infer-0-1", tmpl, controlledBy(workers, "apps/v1", "StatefulSet"), group),
				podOf(ns, "infer-0-2", tmpl, controlledBy(workers, "apps/v1", "StatefulSet"), group))
			return lws
		}},
		{name: "pytorchjob", min: 3, max: 4, podGroup: "bert", kind: "PyTorchJob", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			job := createObject(t, ns, object("kubeflow.org/v1", "PyTorchJob", "bert", map[string]any{
				"runPolicy": map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(3)}},
				"pytorchReplicaSpecs": map[string]any{
					"Master": map[string]any{"replicas": int64(1), "template": templateMap(t, tmpl)},
					"Worker": map[string]any{"replicas": int64(3), "template": templateMap(t, tmpl)},
				}}, owner, nil))
			createPods(t, podOf(ns, "bert-master-0", tmpl, ownerOf(job), nil), podOf(ns, "bert-worker-0", tmpl, ownerOf(job), nil),
				podOf(ns, "bert-worker-1", tmpl, ownerOf(job), nil), podOf(ns, "bert-worker-2", tmpl, ownerOf(job), nil))
			return job
		}},
		{name: "trainjob", min: 3, max: 3, podGroup: "tune", kind: "TrainJob", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			tj := createObject(t, ns, object("trainer.kubeflow.org/v1alpha1", "TrainJob", "tune", map[string]any{"runtimeRef": map[string]any{"name": "torch-distributed"}}, owner, nil))
			// What Trainer makes: a JobSet, whose controller makes Jobs.
			js := object("jobset.x-k8s.io/v1alpha2", "JobSet", "tune", map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "node", "replicas": int64(3), "template": map[string]any{"spec": map[string]any{"parallelism": int64(1), "template": templateMap(t, tmpl)}},
			}}}, nil, nil)
			js.SetOwnerReferences(ownerOf(tj))
			js = createObject(t, ns, js)
			for i := range 3 {
				createJob(t, ns, fmt.Sprintf("tune-node-%d", i), 1, 0, tmpl, nil, nil, ownerOf(js))
			}
			return tj
		}},
		{name: "raycluster", min: 3, max: 4, podGroup: "ray", kind: "RayCluster", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			rc := createObject(t, ns, object("ray.io/v1", "RayCluster", "ray", map[string]any{
				"headGroupSpec":    map[string]any{"template": templateMap(t, tmpl)},
				"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(3), "minReplicas": int64(2), "template": templateMap(t, tmpl)}},
			}, owner, nil))
			createPods(t, podOf(ns, "ray-head", tmpl, ownerOf(rc), nil), podOf(ns, "ray-gpu-0", tmpl, ownerOf(rc), nil),
				podOf(ns, "ray-gpu-1", tmpl, ownerOf(rc), nil), podOf(ns, "ray-gpu-2", tmpl, ownerOf(rc), nil))
			return rc
		}},
		{name: "rayjob", min: 3, max: 3, podGroup: "batch-raycluster", kind: "RayCluster", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			rj := createObject(t, ns, object("ray.io/v1", "RayJob", "batch", map[string]any{"entrypoint": "python train.py"}, owner, nil))
			// What KubeRay makes for a RayJob: a RayCluster, and its pods.
			rc := object("ray.io/v1", "RayCluster", "batch-raycluster", map[string]any{
				"headGroupSpec":    map[string]any{"template": templateMap(t, tmpl)},
				"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(2), "minReplicas": int64(2), "template": templateMap(t, tmpl)}},
			}, nil, nil)
			rc.SetOwnerReferences(ownerOf(rj))
			rc = createObject(t, ns, rc)
			createPods(t, podOf(ns, "batch-head", tmpl, ownerOf(rc), nil), podOf(ns, "batch-gpu-0", tmpl, ownerOf(rc), nil),
				podOf(ns, "batch-gpu-1", tmpl, ownerOf(rc), nil))
			return rc
		}},
		{name: "deployment", min: 2, max: 3, kind: "ReplicaSet", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			// The annotation is on the Deployment; its ReplicaSet controls
			// the pods (Volcano #4423: only the immediate owner was read).
			tmpl := gpuTemplate(ns, map[string]string{"app": "serve"})
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "serve", Labels: owner, Annotations: minAnn(2)},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}}, Template: tmpl}}
			if _, err := env.kube.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var rs *appsv1.ReplicaSet
			waitFor(t, "the Deployment's ReplicaSet", func() bool {
				list, err := env.kube.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
				if err == nil && len(list.Items) == 1 {
					rs = &list.Items[0]
				}
				return rs != nil
			})
			return rs
		}},
		{name: "statefulset", min: 2, max: 3, podGroup: "db", kind: "StatefulSet", make: func(t *testing.T, ns string, owner map[string]string) metav1.Object {
			tmpl := gpuTemplate(ns, nil)
			sts := createStatefulSet(t, ns, "db", 3, tmpl, owner, minAnn(2), nil)
			for i := range 3 {
				createPods(t, podOf(ns, fmt.Sprintf("db-%d", i), tmpl, controlledBy(sts, "apps/v1", "StatefulSet"), map[string]string{"sts": "db"}))
			}
			return sts
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			ns := createNamespace(t, "grouped-"+r.name)
			queue := "grouped-" + r.name
			// Min members of a semi-preemptible gang are non-preemptible
			// work, within the queue's guarantee; the elastic rest is not.
			createQueue(t, builder.MakeQueue(queue).Card(h200, int32(r.min), int32(r.max)).Obj())
			owner := map[string]string{v1alpha1.QueueLabel: queue, v1alpha1.PreemptibilityLabel: v1alpha1.SemiPreemptible}
			createNodes(t, rowNode(ns, 0, r.min-1))
			made := r.make(t, ns, owner)
			name := r.podGroup
			if name == "" {
				name = made.GetName()
			}
			waitMadePodGroup(t, ns, name, madeFor(r.kind, made, int32(r.min), queue, v1alpha1.SemiPreemptible))
			holdBound(t, ns, 0)

			createNodes(t, rowNode(ns, 1, 1))
			waitBound(t, ns, boundCount(r.min))
			if r.max > r.min {
				holdBound(t, ns, r.min) // the elastic rest takes only free capacity
				createNodes(t, rowNode(ns, 2, r.max-r.min))
				waitBound(t, ns, boundCount(r.max))
			}
			want := map[string]int{queue + "/" + v1alpha1.NonPreemptible: r.min}
			if r.max > r.min {
				want[queue+"/"+v1alpha1.Preemptible] = r.max - r.min
			}
			if got := placements(t, ns); !equalCounts(got, want) {
				t.Errorf("pods placed as %v, want %v: the gang's min non-preemptible in its owner's queue, the rest elastic", got, want)
			}
		})
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: not within %v", what, waitTimeout)
	}
}
