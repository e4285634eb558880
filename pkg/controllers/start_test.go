package controllers

import (
	"context"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"

	"cardinal.dev/cardinal/pkg/state"
)

// TestStartLeavesKlogAloneUntilAttached: Start runs before kube-scheduler
// applies its logging options, which replace klog's global logger without
// a lock. The status writers' goroutine must not read that logger until
// the state is attached (after logging is set up), or the process can
// crash on a half-set logger; -race reports the read if it comes early.
func TestStartLeavesKlogAloneUntilAttached(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	Start(ctx, state.New(state.DefaultSettings()), componentbaseconfig.LeaderElectionConfiguration{})
	defer klog.ClearLogger()
	// What logsapi.ValidateAndApply does meanwhile, yielding between
	// writes so the goroutine Start began gets to run among them.
	for range 200 {
		klog.SetLoggerWithOptions(logr.Discard(), klog.ContextualLogger(true))
		runtime.Gosched()
	}
}
