// Package settings reads, once and in one place, what Cardinal's plugins
// share from the scheduler configuration: the default queue,
// preemptibleBelowPriority, cardUnlimitedCpuMemory and the gang's backoff
// (each the argument of one plugin, but read by several), the profile
// Cardinal schedules for, and the leader election the status writers
// follow. They are validated here, with the field path of a bad value, and
// hold whichever plugins are enabled: a plugin left out still has its
// arguments (or their defaults) read.
package settings

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"cardinal.dev/cardinal/apis/config"
	"cardinal.dev/cardinal/apis/config/scheme"
	configv1 "cardinal.dev/cardinal/apis/config/v1"
	"cardinal.dev/cardinal/apis/config/validation"
	"cardinal.dev/cardinal/pkg/state"
	"cardinal.dev/cardinal/pkg/workload"
)

// Cardinal's plugins, by name.
const (
	Gang       = "CardinalGang"
	Queue      = "CardinalQueue"
	CardQuota  = "CardinalCardQuota"
	Preemption = "CardinalPreemption"
)

// Plugins are Cardinal's plugin names.
var Plugins = []string{Gang, Queue, CardQuota, Preemption}

// Config is what Cardinal reads from a scheduler configuration.
type Config struct {
	// Enabled is true when some profile enables a Cardinal plugin.
	Enabled bool
	// State are the settings the plugins share.
	State state.Settings
	// LeaderElection is the scheduler's own; the status writers follow it.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Kubeconfig and Master are where the scheduler finds the API server
	// (clientConnection.kubeconfig, or the --kubeconfig and --master flags),
	// read before kube-scheduler connects to fit it to the server.
	Kubeconfig, Master string
}

// FromFlags reads the configuration kube-scheduler's flags name: the file
// of --config, and the leader election flags given on the command line,
// which override it as they do for kube-scheduler. Without --config no
// profile enables Cardinal's plugins.
func FromFlags(fs *pflag.FlagSet) (Config, error) {
	cfg := &schedconfig.KubeSchedulerConfiguration{}
	hasConfig := false
	if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
		hasConfig = true
		loaded, err := options.LoadConfigFromFile(klog.Background(), f.Value.String())
		if err != nil {
			return Config{}, fmt.Errorf("reading %s: %w", f.Value.String(), err)
		}
		cfg = loaded
	} else {
		v1 := &schedconfigv1.KubeSchedulerConfiguration{}
		scheme.Scheme.Default(v1)
		if err := scheme.Scheme.Convert(v1, cfg, nil); err != nil {
			return Config{}, err
		}
	}
	le := &cfg.LeaderElection
	for name, set := range map[string]func(*pflag.Flag){
		"leader-elect":                    func(f *pflag.Flag) { le.LeaderElect = f.Value.String() == "true" },
		"leader-elect-resource-name":      func(f *pflag.Flag) { le.ResourceName = f.Value.String() },
		"leader-elect-resource-namespace": func(f *pflag.Flag) { le.ResourceNamespace = f.Value.String() },
		"leader-elect-lease-duration":     func(f *pflag.Flag) { le.LeaseDuration.Duration = parseDuration(f) },
		"leader-elect-renew-deadline":     func(f *pflag.Flag) { le.RenewDeadline.Duration = parseDuration(f) },
		"leader-elect-retry-period":       func(f *pflag.Flag) { le.RetryPeriod.Duration = parseDuration(f) },
	} {
		if f := fs.Lookup(name); f != nil && f.Changed {
			set(f)
		}
	}
	out, err := FromConfiguration(cfg)
	if err != nil {
		return out, err
	}
	// As kube-scheduler: --kubeconfig counts only without --config.
	out.Kubeconfig = cfg.ClientConnection.Kubeconfig
	if f := fs.Lookup("kubeconfig"); f != nil && f.Changed && !hasConfig {
		out.Kubeconfig = f.Value.String()
	}
	if f := fs.Lookup("master"); f != nil {
		out.Master = f.Value.String()
	}
	return out, nil
}

func parseDuration(f *pflag.Flag) time.Duration {
	d, _ := time.ParseDuration(f.Value.String())
	return d
}

// FromConfiguration reads Cardinal's settings from a decoded configuration.
// Cardinal's plugins may be enabled in one profile only: they share one
// state, which schedules one profile's pods.
func FromConfiguration(cfg *schedconfig.KubeSchedulerConfiguration) (Config, error) {
	out := Config{State: state.DefaultSettings(), LeaderElection: cfg.LeaderElection}
	profile := -1
	for i := range cfg.Profiles {
		if !enablesCardinal(&cfg.Profiles[i]) {
			continue
		}
		if profile >= 0 {
			return Config{}, field.Invalid(field.NewPath("profiles").Index(i).Child("schedulerName"), cfg.Profiles[i].SchedulerName,
				fmt.Sprintf("Cardinal's plugins are already enabled in profile %s: enable them in one profile only", cfg.Profiles[profile].SchedulerName))
		}
		profile = i
	}
	if profile < 0 {
		return out, nil
	}
	p := &cfg.Profiles[profile]
	out.Enabled = true
	out.State.SchedulerName = p.SchedulerName
	args := map[string]runtime.Object{}
	for _, pc := range p.PluginConfig {
		args[pc.Name] = pc.Args
	}
	var errs field.ErrorList
	path := func(name string) *field.Path {
		return field.NewPath("profiles").Index(profile).Child("pluginConfig").Key(name).Child("args")
	}
	gang, err1 := argsOf[config.CardinalGangArgs](args[Gang], &configv1.CardinalGangArgs{}, path(Gang))
	queue, err2 := argsOf[config.CardinalQueueArgs](args[Queue], &configv1.CardinalQueueArgs{}, path(Queue))
	cards, err3 := argsOf[config.CardinalCardQuotaArgs](args[CardQuota], &configv1.CardinalCardQuotaArgs{}, path(CardQuota))
	preemption, err4 := argsOf[config.CardinalPreemptionArgs](args[Preemption], &configv1.CardinalPreemptionArgs{}, path(Preemption))
	for _, err := range []*field.Error{err1, err2, err3, err4} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, asList(validation.ValidateCardinalGangArgs(path(Gang), gang))...)
		errs = append(errs, asList(validation.ValidateCardinalQueueArgs(path(Queue), queue))...)
		errs = append(errs, asList(validation.ValidateCardinalCardQuotaArgs(path(CardQuota), cards))...)
		errs = append(errs, asList(validation.ValidateCardinalPreemptionArgs(path(Preemption), preemption))...)
	}
	if len(errs) > 0 {
		return Config{}, errs.ToAggregate()
	}
	out.State.DefaultQueue = queue.DefaultQueue
	out.State.PreemptibleBelowPriority = preemption.PreemptibleBelowPriority
	out.State.CardUnlimitedCPUMemory = cards.CardUnlimitedCPUMemory
	out.State.GangBackoff = time.Duration(gang.PodGroupBackoffSeconds) * time.Second
	out.State.StaleGangAfter = 0 // staleGangSeconds: 0 turns it off
	if gang.StaleGangSeconds > 0 {
		out.State.StaleGangAfter = time.Duration(gang.PermitWaitingTimeSeconds+gang.StaleGangSeconds) * time.Second
	}
	out.State.GroupedKinds = workload.NewKinds()
	for _, k := range gang.GroupedKinds {
		gk, _ := workload.ParseKind(k) // validated above
		out.State.GroupedKinds[gk] = true
	}
	out.State.CardRoomFirst = fitChecksEveryResource(cfg, p, args[fitPlugin])
	return out, nil
}

// fitPlugin is kube-scheduler's plugin that refuses nodes without room.
const fitPlugin = "NodeResourcesFit"

// fitChecksEveryResource tells whether the profile's NodeResourcesFit is
// left enabled and ignores no extended resource, neither in its args nor
// for an extender that manages it, so that it refuses every node that
// lacks room for a pod's cards.
func fitChecksEveryResource(cfg *schedconfig.KubeSchedulerConfiguration, p *schedconfig.KubeSchedulerProfile, args runtime.Object) bool {
	for _, e := range cfg.Extenders {
		for _, r := range e.ManagedResources {
			if r.IgnoredByScheduler {
				return false
			}
		}
	}
	if p.Plugins != nil {
		for _, set := range []schedconfig.PluginSet{p.Plugins.MultiPoint, p.Plugins.Filter} {
			for _, pl := range set.Disabled {
				if pl.Name == fitPlugin || pl.Name == "*" {
					return false
				}
			}
		}
	}
	if a, ok := args.(*schedconfig.NodeResourcesFitArgs); ok && (len(a.IgnoredResources) > 0 || len(a.IgnoredResourceGroups) > 0) {
		return false
	}
	return true
}

// argsOf returns a plugin's decoded args, or, when the profile gives none,
// the defaults of their versioned type def.
func argsOf[T any, PT interface {
	*T
	runtime.Object
}](given, def runtime.Object, path *field.Path) (PT, *field.Error) {
	if given == nil {
		scheme.Scheme.Default(def)
		out := PT(new(T))
		if err := scheme.Scheme.Convert(def, out, nil); err != nil {
			return nil, field.InternalError(path, err)
		}
		return out, nil
	}
	out, ok := given.(PT)
	if !ok {
		return nil, field.TypeInvalid(path, fmt.Sprintf("%T", given), fmt.Sprintf("want %T", PT(nil)))
	}
	return out, nil
}

func asList(err error) field.ErrorList {
	if err == nil {
		return nil
	}
	if agg, ok := err.(interface{ Errors() []error }); ok {
		var out field.ErrorList
		for _, e := range agg.Errors() {
			if fe, ok := e.(*field.Error); ok {
				out = append(out, fe)
			} else {
				out = append(out, field.InternalError(nil, e))
			}
		}
		return out
	}
	return field.ErrorList{field.InternalError(nil, err)}
}

// enablesCardinal tells whether a profile enables any Cardinal plugin, at
// any extension point.
func enablesCardinal(p *schedconfig.KubeSchedulerProfile) bool {
	if p.Plugins == nil {
		return false
	}
	sets := []schedconfig.PluginSet{
		p.Plugins.MultiPoint, p.Plugins.PreEnqueue, p.Plugins.QueueSort, p.Plugins.PreFilter, p.Plugins.Filter,
		p.Plugins.PostFilter, p.Plugins.PreScore, p.Plugins.Score, p.Plugins.Reserve, p.Plugins.Permit,
		p.Plugins.PreBind, p.Plugins.Bind, p.Plugins.PostBind,
	}
	for _, set := range sets {
		for _, pl := range set.Enabled {
			for _, name := range Plugins {
				if pl.Name == name {
					return true
				}
			}
		}
	}
	return false
}
