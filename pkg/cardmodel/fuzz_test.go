package cardmodel

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// FuzzParseNames: any card-name value is either refused or read into
// distinct, non-empty names without whitespace that read back the same.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"NVIDIA-H200", "A|B|C", " A | B ", "A||B", "A|A", "NVIDIA-H200/mig-1g.18gb-mixed", "", "|", "A B", "||", "\x00", "NVIDIA-L40S/mps-45g*1/4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ParseNames(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		if len(names) == 0 {
			t.Fatalf("%q: no names and no error", s)
		}
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, " \t\r\n|") || len(n) > maxNameLength || seen[n] {
				t.Fatalf("%q: read %q, with a bad name %q", s, names, n)
			}
			seen[n] = true
		}
		again, err := ParseNames(strings.Join(names, "|"))
		if err != nil || strings.Join(again, "|") != strings.Join(names, "|") {
			t.Fatalf("%q: %q does not read back the same: %q, %v", s, names, again, err)
		}
	})
}

// FuzzParseRequest: any card-request value is either refused or read into
// positive counts of alternatives that all need one resource name.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"NVIDIA-H200":2}`, `{"A|B":2,"C":0}`, `{"NVIDIA-H200|NVIDIA-H200/mig-1g.18gb-mixed":1}`,
		`{"A":-1}`, `{"A":1.5}`, `{"A":1e3}`, `null`, `{}`, `{"A":1}{}`, `[1]`, `[]`, `{`,
		`{"A":2147483648}`, `{"A":99999999999999999999}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		reqs, err := ParseRequest(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		for _, r := range reqs {
			if r.Count <= 0 || len(r.Models) == 0 {
				t.Fatalf("%q: read %+v", s, r)
			}
			if err := SameResource(r.Models); err != nil {
				t.Fatalf("%q: alternatives %q of different resources read: %v", s, r.Models, err)
			}
		}
	})
}

// FuzzQueueCards: any volcano.sh/card.quota annotation beside spec.cards
// gives quotas of one model each with 0 <= guarantee <= capability, and
// never overrides spec.cards.
func FuzzQueueCards(f *testing.F) {
	f.Add(`{"NVIDIA-H200":4}`, "NVIDIA-H200", int32(1), int32(2))
	f.Add(`{"A|B":1}`, "C", int32(0), int32(0))
	f.Add(`{"A":1,"A ":2}`, "A", int32(3), int32(3))
	f.Add(`oops`, "A", int32(1), int32(0))
	f.Fuzz(func(t *testing.T, annotation, model string, guarantee, capability int32) {
		q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "q", Annotations: map[string]string{v1alpha1.VolcanoCardQuotaAnnotation: annotation}}}
		if names, err := ParseNames(model); err != nil || len(names) != 1 || names[0] != model ||
			guarantee < 0 || capability < 0 || (capability != 0 && capability < guarantee) {
			return // refused by the CRD's validation
		}
		c := v1alpha1.CardQuota{Name: model, Guarantee: guarantee}
		if capability != 0 {
			c.Capability = &capability
		}
		q.Spec.Cards = []v1alpha1.CardQuota{c}
		out, err := QueueCards(q)
		if got := out[model]; got.Guarantee != int64(guarantee) || got.Capability != int64(c.EffectiveCapability()) {
			t.Fatalf("spec.cards %+v came back as %+v (annotation %q, err %v)", c, got, annotation, err)
		}
		for m, qu := range out {
			if names, err := ParseNames(m); err != nil || len(names) != 1 || names[0] != m {
				t.Fatalf("annotation %q gave quota for %q, not one model", annotation, m)
			}
			if qu.Guarantee < 0 || qu.Capability < qu.Guarantee {
				t.Fatalf("annotation %q gave %q %+v", annotation, m, qu)
			}
		}
	})
}
