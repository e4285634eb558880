// Package validation checks Cardinal's plugin arguments. Every error carries
// the field path of the offending value, so a bad scheduler configuration
// fails start-up with a message that says where to look.
package validation

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/pkg/workload"
)

// maxUserPriority is the highest priority a user PriorityClass may have.
const maxUserPriority = 1_000_000_000

// maxSeconds is the longest wait in seconds that a duration holds.
const maxSeconds = int64(math.MaxInt64 / time.Second)

// maxPermitSeconds is the longest kube-scheduler lets a pod wait at Permit;
// it cuts a longer wait short without a word.
const maxPermitSeconds = 900

// ValidateCardinalGangArgs validates the gang plugin's args at path.
func ValidateCardinalGangArgs(path *field.Path, args *config.CardinalGangArgs) error {
	var errs field.ErrorList
	switch {
	case args.PermitWaitingTimeSeconds <= 0:
		errs = append(errs, field.Invalid(path.Child("permitWaitingTimeSeconds"), args.PermitWaitingTimeSeconds,
			"must be greater than 0: a gang needs time at Permit for the rest of its min to be placed"))
	case args.PermitWaitingTimeSeconds > maxPermitSeconds:
		errs = append(errs, field.Invalid(path.Child("permitWaitingTimeSeconds"), args.PermitWaitingTimeSeconds,
			fmt.Sprintf("must be at most %d: kube-scheduler holds a pod at Permit for 15 minutes at most", maxPermitSeconds)))
	}
	switch {
	case args.PodGroupBackoffSeconds < 0:
		errs = append(errs, field.Invalid(path.Child("podGroupBackoffSeconds"), args.PodGroupBackoffSeconds,
			"must not be negative; use 0 for no backoff"))
	case args.PodGroupBackoffSeconds > maxSeconds:
		errs = append(errs, field.Invalid(path.Child("podGroupBackoffSeconds"), args.PodGroupBackoffSeconds,
			fmt.Sprintf("must be at most %d, the longest wait a duration holds", maxSeconds)))
	}
	switch {
	case args.StaleGangSeconds < 0:
		errs = append(errs, field.Invalid(path.Child("staleGangSeconds"), args.StaleGangSeconds,
			"must not be negative; use 0 to leave gangs bound below their min alone"))
	case args.StaleGangSeconds > maxSeconds-maxPermitSeconds:
		errs = append(errs, field.Invalid(path.Child("staleGangSeconds"), args.StaleGangSeconds,
			fmt.Sprintf("must be at most %d: with the Permit wait, the longest wait a duration holds", maxSeconds-maxPermitSeconds)))
	}
	seen := map[string]bool{}
	for i, k := range args.GroupedKinds {
		p := path.Child("groupedKinds").Index(i)
		if _, err := workload.ParseKind(k); err != nil {
			errs = append(errs, field.Invalid(p, k, err.Error()))
		} else if seen[k] {
			errs = append(errs, field.Duplicate(p, k))
		}
		seen[k] = true
	}
	return errs.ToAggregate()
}

// ValidateCardinalQueueArgs validates the queue plugin's args at path.
func ValidateCardinalQueueArgs(path *field.Path, args *config.CardinalQueueArgs) error {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(args.DefaultQueue) {
		errs = append(errs, field.Invalid(path.Child("defaultQueue"), args.DefaultQueue,
			"must be a valid Queue name: "+msg))
	}
	return errs.ToAggregate()
}

// ValidateCardinalCardQuotaArgs validates the card quota plugin's args at path.
// Every value of its one boolean is valid; the function exists so each plugin
// validates its args the same way.
func ValidateCardinalCardQuotaArgs(_ *field.Path, _ *config.CardinalCardQuotaArgs) error {
	return nil
}

// ValidateCardinalPreemptionArgs validates the preemption plugin's args at path.
func ValidateCardinalPreemptionArgs(path *field.Path, args *config.CardinalPreemptionArgs) error {
	var errs field.ErrorList
	if args.PreemptibleBelowPriority > maxUserPriority || args.PreemptibleBelowPriority < -maxUserPriority {
		errs = append(errs, field.Invalid(path.Child("preemptibleBelowPriority"), args.PreemptibleBelowPriority,
			"must be between -1000000000 and 1000000000, the range of user priorities"))
	}
	return errs.ToAggregate()
}
