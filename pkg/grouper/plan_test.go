package grouper

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/workload"
)

const minAnn = v1alpha1.MinMemberAnnotation

func job(name string, parallelism, completions int) wl {
	spec := map[string]any{"parallelism": int64(parallelism), "template": tmpl(1, 1)}
	if completions > 0 {
		spec["completions"] = int64(completions)
	}
	return mk("batch/v1", "Job", name, spec)
}

func replicated(name string, replicas, parallelism, completions int) map[string]any {
	js := map[string]any{"parallelism": int64(parallelism), "template": tmpl(1, 1)}
	if completions > 0 {
		js["completions"] = int64(completions)
	}
	return map[string]any{"name": name, "replicas": int64(replicas), "template": map[string]any{"spec": js}}
}

func jobSet(name string, rjs ...map[string]any) wl {
	items := make([]any, len(rjs))
	for i, rj := range rjs {
		items[i] = rj
	}
	return mk("jobset.x-k8s.io/v1alpha2", "JobSet", name, map[string]any{"replicatedJobs": items})
}

func pytorch(name string, master, workers int, minAvailable int) wl {
	spec := map[string]any{"pytorchReplicaSpecs": map[string]any{
		"Master": map[string]any{"replicas": int64(master), "template": tmpl(4, 0)},
		"Worker": map[string]any{"replicas": int64(workers), "template": tmpl(4, 1)},
	}}
	if minAvailable > 0 {
		spec["runPolicy"] = map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(minAvailable)}}
	}
	return mk("kubeflow.org/v1", "PyTorchJob", name, spec)
}

func rayCluster(name string, replicas, minReplicas int) wl {
	return mk("ray.io/v1", "RayCluster", name, map[string]any{
		"headGroupSpec":    map[string]any{"template": tmpl(2, 0)},
		"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": int64(replicas), "minReplicas": int64(minReplicas), "template": tmpl(2, 1)}},
	})
}

// TestPlanFor: every row of SPEC §7's table, its precedence and its bad
// input, and the pitfalls peers' users hit.
func TestPlanFor(t *testing.T) {
	all := workload.NewKinds(workload.GroupableKinds...)
	type want struct {
		name             string
		min, max         int32
		labels           map[string]string
		problems         []string
		minResourcesGPUs int64
	}
	cronJob := mk("batch/v1", "CronJob", "nightly", map[string]any{}).annotated(minAnn, "2")
	deploy := mk("apps/v1", "Deployment", "serve", map[string]any{"replicas": int64(3)}).annotated(minAnn, "3")
	rs := mk("apps/v1", "ReplicaSet", "serve-7d9f", map[string]any{"replicas": int64(3), "template": tmpl(1, 0)}).ownedBy(deploy)
	lws := mk("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "infer", map[string]any{"leaderWorkerTemplate": map[string]any{
		"size": int64(4), "leaderTemplate": tmpl(1, 0), "workerTemplate": tmpl(1, 1)}})
	leaderSts := mk("apps/v1", "StatefulSet", "infer", map[string]any{"replicas": int64(2)}).ownedBy(lws)
	leaderPod := mk("v1", "Pod", "infer-1", nil).ownedBy(leaderSts)
	workerSts := mk("apps/v1", "StatefulSet", "infer-1", map[string]any{"replicas": int64(3)}).ownedBy(leaderPod)
	trainJob := mk("trainer.kubeflow.org/v1alpha1", "TrainJob", "tune", map[string]any{})
	trainJobSet := jobSet("tune", replicated("node", 2, 1, 1)).ownedBy(trainJob)
	trainJobJob := job("tune-node-0", 1, 1).ownedBy(trainJobSet)
	rayJob := mk("ray.io/v1", "RayJob", "batch", map[string]any{})
	rayJobCluster := rayCluster("batch-raycluster-x1", 3, 3).ownedBy(rayJob)
	submitter := job("batch", 1, 1).ownedBy(rayJob)
	partJobSet := jobSet("part", replicated("w", 1, 4, 6))
	workersJob, driverJob := job("sim-workers-0", 4, 0).ownedBy(jobSet("sim")), job("sim-driver-0", 1, 0).ownedBy(jobSet("sim"))
	mixedJobSet := []wl{jobSet("sim", replicated("workers", 1, 4, 0), replicated("driver", 1, 1, 0)),
		workersJob.annotated(minAnn, "2"), driverJob.annotated(minAnn, "1")}
	partJob := job("part-w-0", 4, 6).ownedBy(partJobSet).status(map[string]any{"succeeded": int64(4)})
	longName := strings.Repeat("a", 70)

	tests := []struct {
		name   string
		pod    func() *corev1.Pod
		objs   []wl
		kinds  workload.Kinds
		want   *want
		podLbl map[string]string
	}{
		{
			name: "a Job without the annotation is not a gang (KAI #2098)",
			objs: []wl{job("train", 4, 0)}, pod: func() *corev1.Pod { return podOf(job("train", 4, 0), "train-a") },
		},
		{
			name: "a Job's annotation is its min; its parallelism its max",
			objs: []wl{job("train", 4, 0).annotated(minAnn, "3")},
			pod:  func() *corev1.Pod { return podOf(job("train", 4, 0), "train-a") },
			want: &want{name: "train", min: 3, max: 4, minResourcesGPUs: 3},
		},
		{
			name: "a Job's min is never above the completions it has left",
			objs: []wl{job("train", 4, 6).annotated(minAnn, "4").status(map[string]any{"succeeded": int64(4)})},
			pod:  func() *corev1.Pod { return podOf(job("train", 4, 6), "train-e") },
			want: &want{name: "train", min: 2, max: 2, minResourcesGPUs: 2},
		},
		{
			name: "a min that is not a positive integer is ignored, with an event",
			objs: []wl{job("train", 4, 0).annotated(minAnn, "four")},
			pod:  func() *corev1.Pod { return podOf(job("train", 4, 0), "train-a") },
			want: &want{problems: []string{ReasonInvalidMinMember}},
		},
		{
			name: "a min of zero is not a positive integer",
			objs: []wl{job("train", 4, 0).annotated(minAnn, "0")},
			pod:  func() *corev1.Pod { return podOf(job("train", 4, 0), "train-a") },
			want: &want{problems: []string{ReasonInvalidMinMember}},
		},
		{
			name: "a min above the workload's size is clamped, with an event",
			objs: []wl{job("train", 4, 0).annotated(minAnn, "10")},
			pod:  func() *corev1.Pod { return podOf(job("train", 4, 0), "train-a") },
			want: &want{name: "train", min: 4, max: 4, problems: []string{ReasonMinMemberAboveSize}, minResourcesGPUs: 4},
		},
		{
			name: "the top-level owner's annotation counts when the controller has none",
			objs: []wl{cronJob, job("nightly-1", 2, 0).ownedBy(cronJob)},
			pod:  func() *corev1.Pod { return podOf(job("nightly-1", 2, 0).ownedBy(cronJob), "n-a") },
			want: &want{name: "nightly-1", min: 2, max: 2, minResourcesGPUs: 2},
		},
		{
			name: "an invalid controller annotation falls to the top-level owner's",
			objs: []wl{cronJob, job("nightly-1", 2, 0).ownedBy(cronJob).annotated(minAnn, "x")},
			pod:  func() *corev1.Pod { return podOf(job("nightly-1", 2, 0).ownedBy(cronJob), "n-a") },
			want: &want{name: "nightly-1", min: 2, max: 2, problems: []string{ReasonInvalidMinMember}, minResourcesGPUs: 2},
		},
		{
			name: "a Deployment's annotation makes a gang of its ReplicaSet (Volcano #4423)",
			objs: []wl{deploy, rs}, pod: func() *corev1.Pod { return podOf(rs, "serve-7d9f-a") },
			want: &want{name: "serve-7d9f", min: 3, max: 3},
		},
		{
			name: "a Deployment without the annotation is no gang",
			objs: []wl{mk("apps/v1", "Deployment", "plain", nil), mk("apps/v1", "ReplicaSet", "plain-1", map[string]any{"replicas": int64(2)}).ownedBy(mk("apps/v1", "Deployment", "plain", nil))},
			pod:  func() *corev1.Pod { return podOf(mk("apps/v1", "ReplicaSet", "plain-1", nil), "plain-1-a") },
		},
		{
			name: "a StatefulSet's annotation",
			objs: []wl{mk("apps/v1", "StatefulSet", "db", map[string]any{"replicas": int64(5), "template": tmpl(1, 0)}).annotated(minAnn, "3")},
			pod:  func() *corev1.Pod { return podOf(mk("apps/v1", "StatefulSet", "db", nil), "db-0") },
			want: &want{name: "db", min: 3, max: 5},
		},
		{
			name: "a JobSet's min is Σ replicas × parallelism",
			objs: []wl{jobSet("sim", replicated("workers", 2, 4, 0), replicated("driver", 1, 1, 0)), job("sim-workers-0", 4, 0).ownedBy(jobSet("sim"))},
			pod:  func() *corev1.Pod { return podOf(job("sim-workers-0", 4, 0).ownedBy(jobSet("sim")), "sim-w-0") },
			want: &want{name: "sim", min: 9, max: 9, minResourcesGPUs: 9},
		},
		{
			name: "a JobSet's Job whose completions are not a multiple of its parallelism counts what is left (KAI #1347)",
			objs: []wl{partJobSet, partJob},
			pod:  func() *corev1.Pod { return podOf(partJob, "part-w-0-x") },
			want: &want{name: "part", min: 2, max: 2, minResourcesGPUs: 2},
		},
		{
			name: "a JobSet's annotation comes first",
			objs: []wl{jobSet("sim", replicated("workers", 2, 4, 0)).annotated(minAnn, "3"), job("sim-workers-0", 4, 0).ownedBy(jobSet("sim"))},
			pod:  func() *corev1.Pod { return podOf(job("sim-workers-0", 4, 0).ownedBy(jobSet("sim")), "sim-w-0") },
			want: &want{name: "sim", min: 3, max: 8, minResourcesGPUs: 3},
		},
		{
			// A JobSet copies each replicated job's annotations onto its
			// Jobs: were they read, the gang's pods would plan different
			// mins, and its PodGroup would be patched back and forth.
			name: "a JobSet's Jobs' annotations do not count: every pod of its gang plans the same min",
			objs: mixedJobSet,
			pod:  func() *corev1.Pod { return podOf(workersJob, "sim-w-0") },
			want: &want{name: "sim", min: 5, max: 5, minResourcesGPUs: 5},
		},
		{
			name: "the same gang, planned from its other Job's pod",
			objs: mixedJobSet,
			pod:  func() *corev1.Pod { return podOf(driverJob, "sim-d-0") },
			want: &want{name: "sim", min: 5, max: 5, minResourcesGPUs: 5},
		},
		{
			name:  "a JobSet's Jobs are gangs of their own when only Jobs are grouped",
			objs:  []wl{jobSet("sim", replicated("workers", 2, 4, 0)), job("sim-workers-0", 4, 0).ownedBy(jobSet("sim")).annotated(minAnn, "4")},
			pod:   func() *corev1.Pod { return podOf(job("sim-workers-0", 4, 0).ownedBy(jobSet("sim")), "sim-w-0") },
			kinds: workload.NewKinds(workload.Job),
			want:  &want{name: "sim-workers-0", min: 4, max: 4, minResourcesGPUs: 4},
		},
		{
			name: "a LeaderWorkerSet group: leader and workers, its size its min",
			objs: []wl{lws, leaderSts, leaderPod, workerSts},
			pod: func() *corev1.Pod {
				p := podOf(workerSts, "infer-1-2")
				p.Labels = map[string]string{lwsGroupLabel: "1"}
				return p
			},
			want: &want{name: "infer-1", min: 4, max: 4, minResourcesGPUs: 3},
		},
		{
			name: "a PyTorchJob's minAvailable",
			objs: []wl{pytorch("bert", 1, 3, 3)}, pod: func() *corev1.Pod { return podOf(pytorch("bert", 1, 3, 0), "bert-worker-0") },
			// The cheapest 3 of a cpu master and gpu workers ask for 2 gpus.
			want: &want{name: "bert", min: 3, max: 4, minResourcesGPUs: 2},
		},
		{
			name: "a PyTorchJob without minAvailable needs every replica",
			objs: []wl{pytorch("bert", 1, 3, 0)}, pod: func() *corev1.Pod { return podOf(pytorch("bert", 1, 3, 0), "bert-master-0") },
			want: &want{name: "bert", min: 4, max: 4, minResourcesGPUs: 3},
		},
		{
			name: "a TrainJob runs through its JobSet",
			objs: []wl{trainJob, trainJobSet, trainJobJob}, pod: func() *corev1.Pod { return podOf(trainJobJob, "tune-node-0-0") },
			want: &want{name: "tune", min: 2, max: 2, minResourcesGPUs: 2},
		},
		{
			name: "a RayCluster: head and worker minReplicas",
			objs: []wl{rayCluster("ray", 4, 2)}, pod: func() *corev1.Pod { return podOf(rayCluster("ray", 4, 2), "ray-head") },
			want: &want{name: "ray", min: 3, max: 5, minResourcesGPUs: 2},
		},
		{
			name: "a RayJob's gang is its cluster's",
			objs: []wl{rayJob, rayJobCluster}, pod: func() *corev1.Pod { return podOf(rayJobCluster, "batch-raycluster-x1-head") },
			want: &want{name: "batch-raycluster-x1", min: 4, max: 4, minResourcesGPUs: 3},
		},
		{
			name: "a RayJob's submitter is not in its cluster's gang",
			objs: []wl{rayJob, submitter}, pod: func() *corev1.Pod { return podOf(submitter, "batch-submit") },
		},
		{
			name: "queue and preemptibility from the top-level owner, then the pod template, never the pod",
			objs: []wl{job("train", 2, 0).annotated(minAnn, "2").labelled(v1alpha1.QueueLabel, "team-a").
				templateLabelled(v1alpha1.PreemptibilityLabel, "non-preemptible").templateLabelled(v1alpha1.QueueLabel, "other")},
			pod: func() *corev1.Pod {
				p := podOf(job("train", 2, 0), "train-a")
				p.Labels = map[string]string{v1alpha1.PreemptibilityLabel: "preemptible"}
				return p
			},
			want: &want{name: "train", min: 2, max: 2, minResourcesGPUs: 2,
				labels: map[string]string{v1alpha1.QueueLabel: "team-a", v1alpha1.PreemptibilityLabel: "non-preemptible"}},
		},
		{
			name: "a long name is cut to 63 characters",
			objs: []wl{job(longName, 2, 0).annotated(minAnn, "2")},
			pod:  func() *corev1.Pod { return podOf(job(longName, 2, 0), "p") },
			want: &want{name: strings.Repeat("a", 52) + "-", min: 2, max: 2, minResourcesGPUs: 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := make([]wl, len(tc.objs))
			copy(objs, tc.objs)
			r := newFake(unwrap(objs)...)
			chain, err := Walk(r, tc.pod())
			if err != nil {
				t.Fatalf("Walk: %v", err)
			}
			kinds := tc.kinds
			if kinds == nil {
				kinds = all
			}
			plan, problems := PlanFor(chain, kinds, r.jobsOf)
			var gotProblems []string
			for _, p := range problems {
				gotProblems = append(gotProblems, p.Reason)
			}
			if tc.want == nil {
				if plan != nil || len(problems) > 0 {
					t.Fatalf("want no gang and no problem, got %+v, %v", plan, gotProblems)
				}
				return
			}
			if diff := cmp.Diff(tc.want.problems, gotProblems); diff != "" {
				t.Errorf("problems (-want, +got):\n%s", diff)
			}
			if tc.want.name == "" {
				if plan != nil {
					t.Fatalf("want no gang, got %+v", plan)
				}
				return
			}
			if plan == nil {
				t.Fatal("want a gang, got none")
			}
			if tc.want.name == strings.Repeat("a", 52)+"-" {
				if len(plan.Name) > maxName || !strings.HasPrefix(plan.Name, tc.want.name) {
					t.Errorf("name %q (%d characters), want %q and a hash, at most %d", plan.Name, len(plan.Name), tc.want.name, maxName)
				}
			} else if plan.Name != tc.want.name {
				t.Errorf("name %q, want %q", plan.Name, tc.want.name)
			}
			if plan.Min != tc.want.min || plan.Max != tc.want.max {
				t.Errorf("min, max = %d, %d; want %d, %d", plan.Min, plan.Max, tc.want.min, tc.want.max)
			}
			if got := plan.MinResources.Name("nvidia.com/gpu", "DecimalSI").Value(); got != tc.want.minResourcesGPUs {
				t.Errorf("minResources gpus = %d, want %d", got, tc.want.minResourcesGPUs)
			}
			wantLabels := tc.want.labels
			if wantLabels == nil {
				wantLabels = map[string]string{}
			}
			if diff := cmp.Diff(wantLabels, plan.Labels); diff != "" {
				t.Errorf("labels (-want, +got):\n%s", diff)
			}
		})
	}
}

func unwrap(ws []wl) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(ws))
	for i, w := range ws {
		out[i] = w.u
	}
	return out
}

// TestTemplateAmountsBounded: an amount no pod could ask for, in a
// workload's pod template (which the API server does not validate as a
// pod's), is not read, so summing it cannot stall the grouper; the
// suffixes E and Ei are amounts like any other.
func TestTemplateAmountsBounded(t *testing.T) {
	tmpl := func(cpu string) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "resources": map[string]any{"requests": map[string]any{"cpu": cpu, "nvidia.com/gpu": "1"}}},
			map[string]any{"name": "b", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}},
		}}}
	}
	for _, tc := range []struct {
		cpu  string
		read bool
	}{
		{"500m", true}, {"2", true}, {"1e3", true}, {"1E", true}, {"1Ei", true}, {"1e30", true},
		// Each of these would take hours to add to another were it read.
		{"1e2000000000", false}, {"1E-2000000000", false}, {"1e31", false},
		{"1234567890123456789012345678901234567890123", false},
	} {
		if got := templateRequests(tmpl(tc.cpu)) != nil; got != tc.read {
			t.Errorf("cpu %q read %t, want %t", tc.cpu, got, tc.read)
		}
	}
	if got := minResources([]podTemplate{{spec: tmpl("1e2000000000"), count: 2}, {spec: tmpl("1"), count: 2}}, 3); got.Cpu().MilliValue() != 2000 {
		t.Errorf("min resources with a template that asks for 1e2000000000 cpus: %v, want one pod of the other template, 2 cpus", got)
	}
}
