// Package compat fits one Cardinal binary to the Kubernetes API server it
// runs against (SPEC §6): Kubernetes 1.34 through 1.37. Cardinal is built
// on kube-scheduler 1.37, whose feature gates turn on informers for APIs
// that older servers do not serve (resource.k8s.io/v1 DeviceTaintRules,
// scheduling.k8s.io/v1beta1 PodGroups, ...): an informer on a missing API
// never syncs, and the scheduler never becomes ready. Before kube-scheduler
// builds its informers, Decide reads what the server serves and turns off
// each gate whose API is missing, and every gate that depends on it,
// unless the user set it, and refuses a server older than 1.34.
package compat

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
)

// The API server minors one binary supports.
const (
	MinMinor = 34
	MaxMinor = 37
)

// Supported is the supported range in words.
var Supported = fmt.Sprintf("Kubernetes API servers 1.%d through 1.%d", MinMinor, MaxMinor)

// gateAPIs are kube-scheduler's feature gates whose informers need an API
// that not every supported server serves. A gate not listed needs no API
// beyond what 1.34 serves, or none at all.
var gateAPIs = []struct {
	gate  featuregate.Feature
	needs []schema.GroupVersionResource
}{
	{features.DynamicResourceAllocation, []schema.GroupVersionResource{
		{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"},
		{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"},
		{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"},
	}},
	{features.DRADeviceTaintRules, []schema.GroupVersionResource{{Group: "resource.k8s.io", Version: "v1", Resource: "devicetaintrules"}}},
	{features.GenericWorkload, []schema.GroupVersionResource{{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}}},
	{features.CompositePodGroup, []schema.GroupVersionResource{{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "compositepodgroups"}}},
	{features.CoordinatedLeaderElection, []schema.GroupVersionResource{{Group: "coordination.k8s.io", Version: "v1beta1", Resource: "leasecandidates"}}},
}

// neededGroups are the group versions gateAPIs read: a discovery failure
// of one of them is waited out rather than taken as "not served".
func neededGroups() map[schema.GroupVersion]bool {
	out := map[schema.GroupVersion]bool{}
	for _, g := range gateAPIs {
		for _, r := range g.needs {
			out[r.GroupVersion()] = true
		}
	}
	return out
}

// Server is what an API server says of itself.
type Server struct {
	// GitVersion is its version as it reports it, e.g. v1.36.3.
	GitVersion string
	// Version is GitVersion parsed.
	Version *version.Version
	// served are the resources it serves, by group/version and name.
	served map[schema.GroupVersion]map[string]bool
}

// Serves tells whether the server serves r.
func (s Server) Serves(r schema.GroupVersionResource) bool {
	return s.served[r.GroupVersion()][r.Resource]
}

// NewServer is a server of version gitVersion that serves resources.
func NewServer(gitVersion string, resources ...schema.GroupVersionResource) (Server, error) {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return Server{}, fmt.Errorf("the API server's version %q: %w", gitVersion, err)
	}
	s := Server{GitVersion: gitVersion, Version: v, served: map[schema.GroupVersion]map[string]bool{}}
	for _, r := range resources {
		if s.served[r.GroupVersion()] == nil {
			s.served[r.GroupVersion()] = map[string]bool{}
		}
		s.served[r.GroupVersion()][r.Resource] = true
	}
	return s, nil
}

// servedBy lists the resources an API server serves. A group that fails to
// answer (an aggregated API that is down) is left out, as if not served.
func servedBy(d discovery.DiscoveryInterface) ([]schema.GroupVersionResource, error) {
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		needed := neededGroups()
		for gv, gerr := range failed.Groups {
			if needed[gv] {
				return nil, fmt.Errorf("discovery of %s failed: %w", gv, gerr)
			}
		}
	}
	var resources []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				resources = append(resources, gv.WithResource(r.Name))
			}
		}
	}
	return resources, nil
}

// CheckVersion refuses a server older than MinMinor, naming both versions.
// A server that names no release (v0.0.0-master: built without Kubernetes'
// version stamp) is not refused; Decide warns about it.
func CheckVersion(s Server, binary string) error {
	if s.Version.Major() == 1 && s.Version.Minor() < MinMinor {
		return fmt.Errorf("the Kubernetes API server is %s, older than %s supports: it runs against %s; upgrade the cluster, or run a release of %s built for it",
			s.GitVersion, binary, Supported, binary)
	}
	return nil
}

// Change is a feature gate turned off, and why.
type Change struct {
	Gate   string
	Reason string
}

// Plan is what Decide found: the gates to turn off, and warnings for gates
// the user set on whose API is missing or which depend on a gate turned
// off, and for a server newer than tested.
type Plan struct {
	Off      []Change
	Warnings []string
	// Refusals are gates that can be neither kept (their API is missing)
	// nor turned off (locked on in this release): the scheduler would
	// never become ready, so it refuses to start.
	Refusals []string
}

// Map is the plan's changes as SetFromMap takes them.
func (p Plan) Map() map[string]bool {
	m := make(map[string]bool, len(p.Off))
	for _, c := range p.Off {
		m[c.Gate] = false
	}
	return m
}

// Decide says which of fg's enabled gates to turn off for server s: those
// whose API it does not serve, then those that depend on one turned off.
// A gate in explicit (set by the user) is never changed: a warning says
// what will fail instead.
func Decide(s Server, fg featuregate.MutableFeatureGate, explicit map[string]bool) Plan {
	var p Plan
	switch {
	case s.Version.Major() == 0:
		p.Warnings = append(p.Warnings, fmt.Sprintf("the Kubernetes API server reports version %s, which names no release (a build without Kubernetes' version stamp): taken as supported, and fitted by what it serves", s.GitVersion))
	case s.Version.Major() > 1 || s.Version.Minor() > MaxMinor:
		p.Warnings = append(p.Warnings, fmt.Sprintf("the Kubernetes API server is %s, newer than tested (%s)", s.GitVersion, Supported))
	}
	off := map[featuregate.Feature]bool{}
	specs := fg.GetAll()
	for _, g := range gateAPIs {
		if !fg.Enabled(g.gate) {
			continue
		}
		var missing []string
		for _, r := range g.needs {
			if !s.Serves(r) {
				missing = append(missing, r.Resource+"."+r.Version+"."+r.Group)
			}
		}
		if len(missing) == 0 {
			continue
		}
		why := fmt.Sprintf("the API server (%s) does not serve %s", s.GitVersion, strings.Join(missing, ", "))
		if explicit[string(g.gate)] {
			p.Warnings = append(p.Warnings, fmt.Sprintf("feature gate %s is set on the command line, but %s: its informers will never sync", g.gate, why))
			continue
		}
		if specs[g.gate].LockToDefault {
			p.Refusals = append(p.Refusals, fmt.Sprintf("feature gate %s is always on in this release, and %s: enable that API on the server (--runtime-config)", g.gate, why))
			continue
		}
		if user := explicitDependents(g.gate, fg, explicit); user != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("feature gate %s is kept on because %s, set on the command line, depends on it, but %s: its informers will never sync", g.gate, user, why))
			continue
		}
		off[g.gate] = true
		p.Off = append(p.Off, Change{Gate: string(g.gate), Reason: why})
	}
	// Gates that depend, directly or not, on one turned off go too, or the
	// feature gate's own validation refuses the combination.
	deps := fg.Dependencies()
	names := make([]string, 0, len(deps))
	for g := range deps {
		names = append(names, string(g))
	}
	sort.Strings(names)
	warned := map[featuregate.Feature]bool{}
	for changed := len(off) > 0; changed; {
		changed = false
		for _, name := range names {
			g := featuregate.Feature(name)
			if off[g] || warned[g] || !fg.Enabled(g) {
				continue
			}
			for _, d := range deps[g] {
				if !off[d] {
					continue
				}
				if explicit[name] {
					warned[g] = true
					p.Warnings = append(p.Warnings, fmt.Sprintf("feature gate %s is set on the command line, but depends on %s, which is off", g, d))
					break
				}
				off[g], changed = true, true
				p.Off = append(p.Off, Change{Gate: name, Reason: fmt.Sprintf("it depends on %s, turned off", d)})
				break
			}
		}
	}
	return p
}

// explicitDependents names an enabled gate the user set that depends,
// directly or not, on gate, or "": turning gate off would then make the
// feature gate refuse the combination.
func explicitDependents(gate featuregate.Feature, fg featuregate.FeatureGate, explicit map[string]bool) string {
	deps := fg.Dependencies()
	var dependsOn func(g featuregate.Feature, seen map[featuregate.Feature]bool) bool
	dependsOn = func(g featuregate.Feature, seen map[featuregate.Feature]bool) bool {
		if seen[g] {
			return false
		}
		seen[g] = true
		for _, d := range deps[g] {
			if d == gate || dependsOn(d, seen) {
				return true
			}
		}
		return false
	}
	var names []string
	for name := range explicit {
		if g := featuregate.Feature(name); fg.Enabled(g) && dependsOn(g, map[featuregate.Feature]bool{}) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ExplicitGates reads the gates a --feature-gates flag value sets
// ("A=true,B=false", components as "kube:A=true"), as the user gave them.
func ExplicitGates(value string) (map[string]bool, error) {
	out := map[string]bool{}
	value = strings.Trim(value, "[]")
	if value == "" {
		return out, nil
	}
	var errs []error
	for _, kv := range strings.Split(value, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		// The flag prints a gate of no component as ":A=true".
		if component, rest, ok := strings.Cut(kv, ":"); ok && !strings.Contains(component, "=") {
			if component != "" && component != "kube" {
				continue
			}
			kv = rest
		}
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("--feature-gates: %q is not KEY=VALUE", kv))
			continue
		}
		out[strings.TrimSpace(k)] = true
	}
	return out, errors.Join(errs...)
}

// discoverTimeout bounds how long Fit waits for the API server to answer.
const discoverTimeout = 2 * time.Minute

// retry calls f until it succeeds, for up to discoverTimeout.
func retry(ctx context.Context, logger klog.Logger, f func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, discoverTimeout, true, func(context.Context) (bool, error) {
		if last = f(); last != nil {
			logger.Info("Waiting for the API server", "err", last)
			return false, nil
		}
		return true, nil
	})
	if last != nil {
		return last
	}
	return err
}

// Fit fits fg to the API server d talks to, before anything builds an
// informer: it refuses a server older than MinMinor, turns off the gates
// Decide finds (unless the user set them, flagValue being the
// --feature-gates flag's), and logs each change and warning once.
func Fit(ctx context.Context, d discovery.DiscoveryInterface, fg featuregate.MutableFeatureGate, flagValue, binary string, logger klog.Logger) (Server, error) {
	// An API server that is starting, or briefly away, is waited for, as
	// kube-scheduler itself would wait for its first list; its version is
	// checked before anything else is asked of it.
	var info *apiversion.Info
	if err := retry(ctx, logger, func() (err error) { info, err = d.ServerVersion(); return err }); err != nil {
		return Server{}, fmt.Errorf("reading the API server's version: %w", err)
	}
	s, err := NewServer(info.GitVersion)
	if err != nil {
		return s, err
	}
	if err := CheckVersion(s, binary); err != nil {
		return s, err
	}
	var resources []schema.GroupVersionResource
	if err := retry(ctx, logger, func() (err error) { resources, err = servedBy(d); return err }); err != nil {
		return s, fmt.Errorf("reading what the API server serves: %w", err)
	}
	if s, err = NewServer(info.GitVersion, resources...); err != nil {
		return s, err
	}
	explicit, err := ExplicitGates(flagValue)
	if err != nil {
		return s, err
	}
	plan := Decide(s, fg, explicit)
	if len(plan.Refusals) > 0 {
		return s, fmt.Errorf("%s cannot run against this API server: %s", binary, strings.Join(plan.Refusals, "; "))
	}
	for _, w := range plan.Warnings {
		logger.Info("Warning: "+w, "server", s.GitVersion)
	}
	if len(plan.Off) == 0 {
		logger.Info("The API server serves every API the enabled feature gates need", "server", s.GitVersion)
		return s, nil
	}
	for _, c := range plan.Off {
		logger.Info("Turning off a feature gate the API server cannot serve", "gate", c.Gate, "reason", c.Reason, "server", s.GitVersion)
	}
	// Quietly: the gate's own "setting GA feature gate" warning would
	// read as though the user had set it.
	set := fg.SetFromMap
	if l, ok := fg.(featuregate.MutableFeatureGateWithLogger); ok {
		set = func(m map[string]bool) error { return l.SetFromMapWithLogger(klog.Background().V(5), m) }
	}
	if err := set(plan.Map()); err != nil {
		return s, fmt.Errorf("turning off feature gates the API server %s cannot serve: %w", s.GitVersion, err)
	}
	return s, nil
}
