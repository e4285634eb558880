package scheme

import (
	"math"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/validation"
)

// FuzzDecodeArgs: any scheduler configuration either fails to decode or
// validate with an error, or gives Cardinal's plugins args they can run
// with: durations that neither overflow nor go negative, a priority in
// range.
func FuzzDecodeArgs(f *testing.F) {
	shippedConfig, err := os.ReadFile(shipped)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(shippedConfig))
	const head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: cardinal-scheduler\n  pluginConfig:\n"
	for _, args := range []string{
		"  - name: CardinalGang\n    args: {permitWaitingTimeSeconds: 30, podGroupBackoffSeconds: 0}\n",
		"  - name: CardinalGang\n    args: {permitWaitingTimeSeconds: 9223372036854775807}\n",
		"  - name: CardinalQueue\n    args: {defaultQueue: team-a}\n",
		"  - name: CardinalCardQuota\n    args: {cardUnlimitedCpuMemory: true}\n",
		"  - name: CardinalPreemption\n    args: {preemptibleBelowPriority: -7}\n",
		"  - name: CardinalGang\n    args: {unknownField: 1}\n",
	} {
		f.Add(head + args)
	}
	f.Fuzz(func(t *testing.T, data string) {
		obj, err := runtime.Decode(kubeschedulerscheme.Codecs.UniversalDecoder(), []byte(data))
		if err != nil {
			return
		}
		cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
		if !ok {
			return
		}
		for i, prof := range cfg.Profiles {
			for j, pc := range prof.PluginConfig {
				path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
				checkArgs(t, path, pc.Args)
			}
		}
	})
}

// checkArgs fails t when args that validate cannot be run with.
func checkArgs(t *testing.T, path *field.Path, args runtime.Object) {
	t.Helper()
	switch a := args.(type) {
	case *config.CardinalGangArgs:
		if validation.ValidateCardinalGangArgs(path, a) != nil {
			return
		}
		wait := time.Duration(a.PermitWaitingTimeSeconds) * time.Second
		backoff := time.Duration(a.PodGroupBackoffSeconds) * time.Second
		if wait <= 0 || wait/time.Second != time.Duration(a.PermitWaitingTimeSeconds) || backoff < 0 || backoff/time.Second != time.Duration(a.PodGroupBackoffSeconds) {
			t.Fatalf("%s accepted %+v: as durations %s and %s", path, *a, wait, backoff)
		}
	case *config.CardinalQueueArgs:
		if validation.ValidateCardinalQueueArgs(path, a) == nil && a.DefaultQueue == "" {
			t.Fatalf("%s accepted an empty default queue", path)
		}
	case *config.CardinalCardQuotaArgs:
		_ = validation.ValidateCardinalCardQuotaArgs(path, a)
	case *config.CardinalPreemptionArgs:
		if validation.ValidateCardinalPreemptionArgs(path, a) == nil && (a.PreemptibleBelowPriority > math.MaxInt32/2 || a.PreemptibleBelowPriority < math.MinInt32/2) {
			t.Fatalf("%s accepted preemptibleBelowPriority %d", path, a.PreemptibleBelowPriority)
		}
	}
}
