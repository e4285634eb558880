package refusal

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/pkg/quota"
)

// Refusals for a queue's quota (SPEC §3, §4). Numbers are in the state's
// units (milli-cpu, bytes, cards); a Resource is a resource name, a card
// model, or card-model alternatives "A|B", and String prints each in the
// user's units.

// QuotaExceeded: the pod would take its queue past its capability (SPEC
// §3.1, §4.6).
type QuotaExceeded struct {
	Queue                           string
	Resource                        string
	Requested, WouldUse, Capability int64
}

func (r QuotaExceeded) String() string {
	return fmt.Sprintf("queue %s has insufficient %s quota: requested %s, would use %s, capability %s",
		r.Queue, r.Resource, r.format(r.Requested), r.format(r.WouldUse), r.format(r.Capability))
}

func (r QuotaExceeded) Error() string { return r.String() }

// Fix: a request larger than the whole capability needs the capability
// raised (or less asked); otherwise the queue needs what is over it.
func (r QuotaExceeded) Fix() string {
	if r.Requested > r.Capability {
		return fmt.Sprintf("it alone asks for %s %s, more than queue %s's capability of %s: raise the capability to at least %s, or ask for less (a lower minMember, smaller pods)",
			r.format(r.Requested), r.Resource, r.Queue, r.format(r.Capability), r.format(r.WouldUse))
	}
	return fmt.Sprintf("queue %s needs %s more %s: raise its capability for %s to %s, or end work in queue %s that uses it (kubectl cardinal queues shows its use)",
		r.Queue, r.format(r.WouldUse-r.Capability), r.Resource, r.Resource, r.format(r.WouldUse), r.Queue)
}

func (r QuotaExceeded) format(v int64) string {
	return quota.Format(corev1.ResourceName(r.Resource), v)
}

// GuaranteeExceeded: a non-preemptible pod would take its queue's
// non-preemptible use past its guarantee (SPEC §3.5).
type GuaranteeExceeded struct {
	Queue                          string
	Resource                       string
	Requested, WouldUse, Guarantee int64
}

func (r GuaranteeExceeded) String() string {
	f := func(v int64) string { return quota.Format(corev1.ResourceName(r.Resource), v) }
	return fmt.Sprintf("queue %s: non-preemptible pods may use only its guarantee of %s: requested %s, would use %s, guarantee %s",
		r.Queue, r.Resource, f(r.Requested), f(r.WouldUse), f(r.Guarantee))
}

func (r GuaranteeExceeded) Error() string { return r.String() }

func (r GuaranteeExceeded) Fix() string {
	return guaranteeFix(r.Queue, r.Resource, r.WouldUse)
}

func guaranteeFix(queue, resource string, use int64) string {
	return fmt.Sprintf("raise queue %s's guarantee of %s to %s, or make the workload preemptible (label %s)",
		queue, resource, quota.Format(corev1.ResourceName(resource), use), v1alpha1.PreemptibilityLabel)
}

// GangOverQuota: a gang is held back from admission because the rest of
// its min does not fit its queue's capability (SPEC §3.4), counting as
// free what Note says.
type GangOverQuota struct {
	Gang    string
	Missing int
	Quota   QuotaExceeded
	// Note says what was counted as free (the gang's elastic pods, ...).
	Note string
}

func (r GangOverQuota) String() string {
	return fmt.Sprintf("gang %s is held: its min needs %d more pods; %s (%s)", r.Gang, r.Missing, r.Quota, r.Note)
}

func (r GangOverQuota) Error() string { return r.String() }
func (r GangOverQuota) Fix() string   { return r.Quota.Fix() }

// GangOverGuarantee: a non-preemptible or semi-preemptible gang is held
// back because the rest of its min does not fit its queue's guarantee
// (SPEC §3.5).
type GangOverGuarantee struct {
	Gang           string
	Preemptibility string
	Missing        int
	Queue          string
	Resource       string
	// Guarantee is the queue's; WouldUse its non-preemptible use with the
	// rest of the min.
	Guarantee, WouldUse int64
}

func (r GangOverGuarantee) String() string {
	f := func(v int64) string { return quota.Format(corev1.ResourceName(r.Resource), v) }
	return fmt.Sprintf("gang %s is held: it is %s and its min needs %d more pods; queue %s guarantees %s %s and non-preemptible pods would use %s",
		r.Gang, r.Preemptibility, r.Missing, r.Queue, r.Resource, f(r.Guarantee), f(r.WouldUse))
}

func (r GangOverGuarantee) Error() string { return r.String() }
func (r GangOverGuarantee) Fix() string   { return guaranteeFix(r.Queue, r.Resource, r.WouldUse) }

// AnnotationInvalid: an annotation Cardinal reads cannot be read.
type AnnotationInvalid struct {
	// Object is what carries it: "pod NS/NAME" or "PodGroup NS/NAME".
	Object, Annotation, Problem string
}

func (r AnnotationInvalid) String() string {
	return fmt.Sprintf("%s: annotation %s is invalid: %s", r.Object, r.Annotation, r.Problem)
}

func (r AnnotationInvalid) Error() string { return r.String() }

func (r AnnotationInvalid) Fix() string {
	return fmt.Sprintf("correct the annotation %s on %s", r.Annotation, r.Object)
}

// GangRequestInvalid: a gang is held because its PodGroup's card request
// annotation cannot be read.
type GangRequestInvalid struct {
	Gang    string
	Invalid AnnotationInvalid
}

func (r GangRequestInvalid) String() string {
	return fmt.Sprintf("gang %s is held: %s", r.Gang, r.Invalid)
}

func (r GangRequestInvalid) Error() string { return r.String() }
func (r GangRequestInvalid) Fix() string   { return r.Invalid.Fix() }

// NoModelQuota: the pod's queue lists no quota for the card model (SPEC
// §4.2).
type NoModelQuota struct {
	Queue, Model string
}

func (r NoModelQuota) String() string {
	return fmt.Sprintf("queue %s has no quota for card model %s: add it to the queue's spec.cards, or ask for a model the queue lists", r.Queue, r.Model)
}

func (r NoModelQuota) Error() string { return r.String() }

func (r NoModelQuota) Fix() string {
	return fmt.Sprintf("add %s to queue %s's spec.cards, or ask for a model the queue lists (annotation cardinal.dev/card-name)", r.Model, r.Queue)
}

func init() {
	register[QuotaExceeded]()
	register[GuaranteeExceeded]()
	register[GangOverQuota]()
	register[GangOverGuarantee]()
	register[AnnotationInvalid]()
	register[GangRequestInvalid]()
	register[NoModelQuota]()
}
