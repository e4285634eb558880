package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cardinal.dev/cardinal/apis/config"
)

func TestValidateArgs(t *testing.T) {
	path := field.NewPath("pluginConfig").Key("P").Child("args")
	tests := []struct {
		name    string
		err     error
		wantErr string // empty: valid
	}{
		{"gang defaults", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 60, PodGroupBackoffSeconds: 10}), ""},
		{"gang no backoff", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 1}), ""},
		{"gang zero wait", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 0}), "pluginConfig[P].args.permitWaitingTimeSeconds: Invalid value: 0"},
		{"gang negative backoff", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 5, PodGroupBackoffSeconds: -1}), "pluginConfig[P].args.podGroupBackoffSeconds: Invalid value: -1"},
		{"gang wait past kube-scheduler's longest", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 901}), "pluginConfig[P].args.permitWaitingTimeSeconds: Invalid value: 901: must be at most 900"},
		{"gang wait past a duration", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 9_223_372_037}), "pluginConfig[P].args.permitWaitingTimeSeconds: Invalid value: 9223372037: must be at most 900"},
		{"gang longest wait", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 900, PodGroupBackoffSeconds: 9_223_372_036}), ""},
		{"gang backoff past a duration", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 5, PodGroupBackoffSeconds: 1 << 62}), "pluginConfig[P].args.podGroupBackoffSeconds"},
		{"gang stale gangs left alone", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 5, StaleGangSeconds: 0}), ""},
		{"gang negative stale", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 5, StaleGangSeconds: -1}), "pluginConfig[P].args.staleGangSeconds: Invalid value: -1"},
		{"gang longest stale", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 900, StaleGangSeconds: 9_223_372_036 - 900}), ""},
		{"gang stale past a duration", ValidateCardinalGangArgs(path, &config.CardinalGangArgs{PermitWaitingTimeSeconds: 900, StaleGangSeconds: 9_223_372_036 - 899}), "pluginConfig[P].args.staleGangSeconds"},
		{"queue default", ValidateCardinalQueueArgs(path, &config.CardinalQueueArgs{DefaultQueue: "default"}), ""},
		{"queue bad name", ValidateCardinalQueueArgs(path, &config.CardinalQueueArgs{DefaultQueue: "Team A"}), "pluginConfig[P].args.defaultQueue: Invalid value: \"Team A\""},
		{"queue empty name", ValidateCardinalQueueArgs(path, &config.CardinalQueueArgs{}), "pluginConfig[P].args.defaultQueue"},
		{"card quota", ValidateCardinalCardQuotaArgs(path, &config.CardinalCardQuotaArgs{CardUnlimitedCPUMemory: true}), ""},
		{"preemption default", ValidateCardinalPreemptionArgs(path, &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 100}), ""},
		{"preemption negative ok", ValidateCardinalPreemptionArgs(path, &config.CardinalPreemptionArgs{PreemptibleBelowPriority: -5}), ""},
		{"preemption too high", ValidateCardinalPreemptionArgs(path, &config.CardinalPreemptionArgs{PreemptibleBelowPriority: 2_000_000_000}), "pluginConfig[P].args.preemptibleBelowPriority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.wantErr == "" && tc.err != nil:
				t.Errorf("want valid, got %v", tc.err)
			case tc.wantErr != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.wantErr)):
				t.Errorf("want error containing %q, got %v", tc.wantErr, tc.err)
			}
		})
	}
}
