package compat

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiversion "k8s.io/apimachinery/pkg/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/kubernetes/pkg/features"
)

var (
	resourceClaims   = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}
	resourceSlices   = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	deviceClasses    = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"}
	deviceTaintRules = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "devicetaintrules"}
	podGroups        = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
)

// TestDecide: on each supported server, the gates whose APIs it lacks are
// turned off, with the gates that depend on them, and the result is a
// combination kube-scheduler's feature gate accepts; a gate the user set
// is left as set, with a warning.
func TestDecide(t *testing.T) {
	dra := []schema.GroupVersionResource{resourceClaims, resourceSlices, deviceClasses}
	tests := []struct {
		name       string
		version    string
		served     []schema.GroupVersionResource
		set        map[string]bool // --feature-gates
		explicit   string
		wantOff    []string
		wantWarns  []string
		wantRefuse string
	}{
		{name: "1.37 serves all", version: "v1.37.2", served: append(dra, deviceTaintRules)},
		{name: "1.36: no v1 DeviceTaintRules", version: "v1.36.3", served: dra, wantOff: []string{"DRADeviceTaintRules"}},
		{name: "1.34 without the resource API (runtime-config off): refused", version: "v1.34.4",
			wantOff:    []string{"DRADeviceTaintRules"},
			wantRefuse: "feature gate DynamicResourceAllocation is always on in this release, and the API server (v1.34.4) does not serve resourceclaims.v1.resource.k8s.io"},
		{name: "1.36, a gate the user set depends on one whose API is missing: kept, and warned", version: "v1.36.3", served: dra,
			set: map[string]bool{"GenericWorkload": true, "WorkloadWithJob": true}, explicit: ":WorkloadWithJob=true",
			wantOff:   []string{"DRADeviceTaintRules"},
			wantWarns: []string{"feature gate GenericWorkload is kept on because WorkloadWithJob, set on the command line, depends on it"}},
		{name: "1.36, GenericWorkload asked for: kept, and warned", version: "v1.36.3", served: dra,
			set: map[string]bool{"GenericWorkload": true}, explicit: "GenericWorkload=true",
			wantOff: []string{"DRADeviceTaintRules"}, wantWarns: []string{"GenericWorkload is set on the command line, but the API server (v1.36.3) does not serve podgroups.v1beta1.scheduling.k8s.io"}},
		{name: "1.37 with GenericWorkload set in the config's gates, not the flag: off with its dependents", version: "v1.37.2", served: append(dra, deviceTaintRules),
			set:     map[string]bool{"GenericWorkload": true, "WorkloadWithJob": true},
			wantOff: []string{"GenericWorkload", "WorkloadWithJob"}},
		{name: "1.36, DRADeviceTaintRules set on the command line", version: "v1.36.3", served: dra,
			set: map[string]bool{"DRADeviceTaintRules": true}, explicit: "kube:DRADeviceTaintRules=true",
			wantWarns: []string{"DRADeviceTaintRules is set on the command line"}},
		{name: "1.38: newer than tested", version: "v1.38.0", served: append(dra, deviceTaintRules, podGroups),
			wantWarns: []string{"newer than tested"}},
		{name: "a build that names no release", version: "v0.0.0-master+$Format:%H$", served: dra,
			wantOff: []string{"DRADeviceTaintRules"}, wantWarns: []string{"names no release"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fg := utilfeature.DefaultFeatureGate.DeepCopy()
			if err := fg.SetFromMap(tc.set); err != nil {
				t.Fatal(err)
			}
			s, err := NewServer(tc.version, tc.served...)
			if err != nil {
				t.Fatal(err)
			}
			explicit, err := ExplicitGates(tc.explicit)
			if err != nil {
				t.Fatal(err)
			}
			plan := Decide(s, fg, explicit)
			var off []string
			for _, c := range plan.Off {
				off = append(off, c.Gate)
			}
			if diff := cmp.Diff(tc.wantOff, off); diff != "" {
				t.Errorf("gates turned off (-want, +got):\n%s\nplan: %+v", diff, plan)
			}
			if len(plan.Warnings) != len(tc.wantWarns) {
				t.Errorf("warnings %q, want %d", plan.Warnings, len(tc.wantWarns))
			}
			for i, w := range tc.wantWarns {
				if i < len(plan.Warnings) && !strings.Contains(plan.Warnings[i], w) {
					t.Errorf("warning %q, want it to say %q", plan.Warnings[i], w)
				}
			}
			if got := strings.Join(plan.Refusals, "; "); !strings.HasPrefix(got, tc.wantRefuse) || (got == "") != (tc.wantRefuse == "") {
				t.Errorf("refusals %q, want %q", got, tc.wantRefuse)
			}
			if err := fg.SetFromMap(plan.Map()); err != nil {
				t.Errorf("kube-scheduler's feature gate refuses the plan: %v", err)
			}
			if errs := fg.Validate(); len(errs) > 0 {
				t.Errorf("the gates after the plan do not validate: %v", errs)
			}
			for _, c := range plan.Off {
				if fg.Enabled(featuregate.Feature(c.Gate)) {
					t.Errorf("%s still enabled after the plan", c.Gate)
				}
			}
		})
	}
}

// TestCheckVersion: a server older than 1.34 is refused with both versions
// named; 1.34 through 1.37, and newer, are not.
func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		refused bool
	}{
		{"v1.33.5", true}, {"v1.28.0-gke.100", true}, {"v1.34.4", false}, {"v1.35.4", false}, {"v1.37.2", false}, {"v1.38.0-alpha.1", false},
		{"v0.0.0-master+$Format:%H$", false}, // a build without the version stamp
	} {
		s, err := NewServer(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckVersion(s, "cardinal-scheduler")
		if (err != nil) != tc.refused {
			t.Errorf("%s: %v, want refused %v", tc.version, err, tc.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), tc.version) || !strings.Contains(err.Error(), "1.34 through 1.37")) {
			t.Errorf("%s: %q does not name both the server's version and the supported range", tc.version, err)
		}
	}
}

// TestExplicitGates: what --feature-gates sets, as its flag prints it.
func TestExplicitGates(t *testing.T) {
	// The flag kube-scheduler registers prints a gate of no component as
	// ":A=true".
	var m map[string][]string
	flag := cliflag.NewColonSeparatedMultimapStringStringAllowDefaultEmptyKey(&m)
	if err := flag.Set("GenericWorkload=true,kube:WorkloadWithJob=true,wardle:Other=true"); err != nil {
		t.Fatal(err)
	}
	got, err := ExplicitGates(flag.String())
	if diff := cmp.Diff(map[string]bool{"GenericWorkload": true, "WorkloadWithJob": true}, got); err != nil || diff != "" {
		t.Errorf("from the flag's %q: %v (-want, +got):\n%s", flag.String(), err, diff)
	}

	for _, tc := range []struct {
		in   string
		want map[string]bool
		err  bool
	}{
		{"", map[string]bool{}, false},
		{"A=true,B=false", map[string]bool{"A": true, "B": true}, false},
		{"kube:A=true,wardle:C=true", map[string]bool{"A": true}, false},
		{"[A=true]", map[string]bool{"A": true}, false},
		{"A", map[string]bool{}, true},
	} {
		got, err := ExplicitGates(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%q: error %v, want %v", tc.in, err, tc.err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want, +got):\n%s", tc.in, diff)
		}
	}
}

// TestFit: against a 1.36 server, Fit turns off DRADeviceTaintRules on the
// gate kube-scheduler reads and says so in its log; a 1.33 server is
// refused before anything else is asked of it.
func TestFit(t *testing.T) {
	server := func(gitVersion string, lists ...*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
		return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}, FakedServerVersion: &apiversion.Info{GitVersion: gitVersion}}
	}
	resourceV1 := &metav1.APIResourceList{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "resourceclaims"}, {Name: "resourceclaims/status"}, {Name: "resourceslices"}, {Name: "deviceclasses"},
	}}

	fg := utilfeature.DefaultFeatureGate.DeepCopy()
	var log bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&log)))
	s, err := Fit(context.Background(), server("v1.36.3", resourceV1), fg, "", "cardinal-scheduler", logger)
	if err != nil {
		t.Fatal(err)
	}
	if fg.Enabled(features.DRADeviceTaintRules) || !fg.Enabled(features.DynamicResourceAllocation) {
		t.Errorf("after Fit on %s: DRADeviceTaintRules %v, DynamicResourceAllocation %v; want off, on", s.GitVersion,
			fg.Enabled(features.DRADeviceTaintRules), fg.Enabled(features.DynamicResourceAllocation))
	}
	if want := `"Turning off a feature gate the API server cannot serve" gate="DRADeviceTaintRules"`; !strings.Contains(log.String(), want) {
		t.Errorf("log %q does not say %s", log.String(), want)
	}

	_, err = Fit(context.Background(), server("v1.33.5"), utilfeature.DefaultFeatureGate.DeepCopy(), "", "cardinal-scheduler", logger)
	if err == nil || !strings.Contains(err.Error(), "v1.33.5") || !strings.Contains(err.Error(), "1.34 through 1.37") {
		t.Errorf("Fit on v1.33.5: %v, want a refusal naming both versions", err)
	}
}
