package controlplane

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"cardinal.dev/cardinal/pkg/settings"
	"cardinal.dev/cardinal/pkg/workload"
)

// hashed is the suffix kustomize's configMapGenerator, and the chart, give
// the scheduler configuration's ConfigMap: a hash of its content.
var hashed = regexp.MustCompile(`^(cardinal-scheduler-config)-[a-z0-9]{10}$`)

// normalized is objs by kind/namespace/name, with the hash of the
// configuration's ConfigMap name left out and its configuration parsed,
// so that comments and key order, which differ between the two, do not.
func normalized(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		// A copy through JSON, with numbers of one type: kustomize's are
		// Go ints, Helm's int64.
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		o = &unstructured.Unstructured{}
		if err := json.Unmarshal(data, &o.Object); err != nil {
			t.Fatal(err)
		}
		o.SetName(hashed.ReplaceAllString(o.GetName(), "$1"))
		switch o.GetKind() {
		case "ConfigMap":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			parsed := map[string]any{}
			for k, v := range data {
				var m any
				if err := yaml.Unmarshal([]byte(v), &m); err != nil {
					t.Fatalf("ConfigMap %s key %s: %v", o.GetName(), k, err)
				}
				parsed[k] = m
			}
			o.Object["data"] = parsed
		case "Deployment":
			volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range volumes {
				if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
					cm["name"] = hashed.ReplaceAllString(cm["name"].(string), "$1")
				}
			}
			_ = unstructured.SetNestedSlice(o.Object, volumes, "spec", "template", "spec", "volumes")
		}
		key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if _, dup := out[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		out[key] = o.Object
	}
	return out
}

func roots(t *testing.T) (chart, config string) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "cardinal"), filepath.Join(root, "config")
}

// TestChartMatchesConfig: `helm template` of charts/cardinal with its
// default values gives the same objects as `kubectl apply -k config/`
// (SPEC §6), CRDs included.
func TestChartMatchesConfig(t *testing.T) {
	chart, config := roots(t)
	fromChart, err := HelmTemplate(chart, "cardinal", nil)
	if err != nil {
		t.Fatal(err)
	}
	fromConfig, err := KustomizeBuild(config)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(normalized(t, fromConfig), normalized(t, fromChart)); diff != "" {
		t.Errorf("objects of config/ (-) and of the chart with its default values (+) differ:\n%s", diff)
	}
}

// find returns the rendered object of kind and name.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && hashed.ReplaceAllString(o.GetName(), "$1") == name {
			return o
		}
	}
	t.Fatalf("the chart renders no %s %s", kind, name)
	return nil
}

// schedulerSettings reads the configuration the chart's ConfigMap holds as
// cardinal-scheduler reads its --config at start-up, bad values refused.
func schedulerSettings(t *testing.T, objs []*unstructured.Unstructured) (settings.Config, error) {
	t.Helper()
	data, _, _ := unstructured.NestedString(find(t, objs, "ConfigMap", "cardinal-scheduler-config").Object, "data", "scheduler-config.yaml")
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("config", path, "")
	return settings.FromFlags(fs)
}

// TestChartValues: the chart's values change what they say, and the
// scheduler configuration it renders is one the scheduler accepts.
func TestChartValues(t *testing.T) {
	chart, _ := roots(t)
	tests := []struct {
		name    string
		values  string
		check   func(t *testing.T, objs []*unstructured.Unstructured, cfg settings.Config)
		wantErr string
	}{
		{name: "replicas, image and resources", values: `
replicas: 3
image: {repository: registry.example/cardinal, tag: v0.2.0, pullPolicy: Always}
resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "4", memory: 8Gi}}
`, check: func(t *testing.T, objs []*unstructured.Unstructured, _ settings.Config) {
			d := find(t, objs, "Deployment", "cardinal-scheduler")
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			c := containers[0].(map[string]any)
			limits := c["resources"].(map[string]any)["limits"].(map[string]any)
			if replicas != 3 || c["image"] != "registry.example/cardinal:v0.2.0" || c["imagePullPolicy"] != "Always" || limits["memory"] != "8Gi" {
				t.Errorf("replicas %d, image %v, pull %v, limits %v", replicas, c["image"], c["imagePullPolicy"], limits)
			}
		}},
		{name: "plugin arguments", values: `
gang: {permitWaitingTimeSeconds: 30, podGroupBackoffSeconds: 5, staleGangSeconds: 0, groupedKinds: [Job.batch, RayCluster.ray.io]}
queue: {defaultQueue: batch}
cardQuota: {cardUnlimitedCpuMemory: true}
preemption: {preemptibleBelowPriority: 50}
`, check: func(t *testing.T, _ []*unstructured.Unstructured, cfg settings.Config) {
			s := cfg.State
			if s.DefaultQueue != "batch" || !s.CardUnlimitedCPUMemory || s.PreemptibleBelowPriority != 50 || s.StaleGangAfter != 0 ||
				!cmp.Equal(s.GroupedKinds, workload.NewKinds(workload.Job, workload.RayCluster)) {
				t.Errorf("settings %+v", s)
			}
		}},
		{name: "grouping nothing", values: "gang: {groupedKinds: []}\n", check: func(t *testing.T, _ []*unstructured.Unstructured, cfg settings.Config) {
			if len(cfg.State.GroupedKinds) != 0 {
				t.Errorf("grouped kinds %v, want none", cfg.State.GroupedKinds)
			}
		}},
		{name: "a bad argument fails the scheduler's start naming its field", values: "gang: {groupedKinds: [CronJob.batch]}\n",
			wantErr: "args.groupedKinds[0]: Invalid value: \"CronJob.batch\""},
		{name: "another namespace", values: "namespace: ops\n", check: func(t *testing.T, objs []*unstructured.Unstructured, cfg settings.Config) {
			for _, o := range objs {
				if ns := o.GetNamespace(); ns != "" && ns != "ops" && ns != "kube-system" {
					t.Errorf("%s %s in namespace %s, want ops", o.GetKind(), o.GetName(), ns)
				}
			}
			find(t, objs, "Namespace", "ops")
			policy, _ := yaml.Marshal(find(t, objs, "ValidatingAdmissionPolicy", "cardinal-books").Object)
			if !strings.Contains(string(policy), "system:serviceaccount:ops:cardinal-scheduler") || strings.Contains(string(policy), "cardinal-system") {
				t.Errorf("the admission policy does not name the scheduler's service account in ops:\n%s", policy)
			}
			if cfg.LeaderElection.ResourceNamespace != "ops" {
				t.Errorf("leader election in %s, want ops", cfg.LeaderElection.ResourceNamespace)
			}
		}},
		{name: "no namespace made", values: "createNamespace: false\n", check: func(t *testing.T, objs []*unstructured.Unstructured, _ settings.Config) {
			for _, o := range objs {
				if o.GetKind() == "Namespace" {
					t.Errorf("a Namespace %s is rendered", o.GetName())
				}
			}
		}},
		{name: "no CRDs", values: "installCRDs: false\n", check: func(t *testing.T, objs []*unstructured.Unstructured, _ settings.Config) {
			for _, o := range objs {
				if o.GetKind() == "CustomResourceDefinition" {
					t.Errorf("CRD %s is rendered", o.GetName())
				}
			}
		}},
		{name: "one replica, no PodDisruptionBudget that would keep a drain from evicting it", values: "replicas: 1\n", check: func(t *testing.T, objs []*unstructured.Unstructured, _ settings.Config) {
			for _, o := range objs {
				if o.GetKind() == "PodDisruptionBudget" {
					t.Error("a PodDisruptionBudget keeping 1 of 1 replica is rendered")
				}
			}
		}},
		{name: "queues", values: `
queues:
- name: team-a
  spec: {weight: 2, cards: [{name: NVIDIA-H200, guarantee: 3, capability: 6}]}
- name: team-b
`, check: func(t *testing.T, objs []*unstructured.Unstructured, _ settings.Config) {
			a := find(t, objs, "Queue", "team-a")
			weight, _, _ := unstructured.NestedInt64(a.Object, "spec", "weight")
			cards, _, _ := unstructured.NestedSlice(a.Object, "spec", "cards")
			if weight != 2 || len(cards) != 1 {
				t.Errorf("team-a's spec %v", a.Object["spec"])
			}
			find(t, objs, "Queue", "team-b")
		}},
		{name: "a queue without a name", values: "queues: [{spec: {weight: 1}}]\n", wantErr: "each of queues needs a name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			objs, err := HelmTemplate(chart, "cardinal", values)
			var cfg settings.Config
			if err == nil {
				cfg, err = schedulerSettings(t, objs)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, objs, cfg)
		})
	}
}
