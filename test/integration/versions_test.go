package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/test/builder"
)

// TestFitsTheAPIServer: cardinal-scheduler starts on the API server the
// package runs against (1.37, or an older supported minor under `make
// integration-versions`) with no flag set by hand, its log names the
// feature gates it turned off for what that server does not serve, and it
// schedules (SPEC §6).
func TestFitsTheAPIServer(t *testing.T) {
	ns := createGPUNamespace(t, "fits-server")
	createNodes(t, gpuNodes("fits", 1, 2)...)
	s := startScheduler(t)
	// One line of the log must hold every part.
	want := []string{"The API server serves every API the enabled feature gates need"}
	if v := env.apiserverVersion; v != "" {
		want = []string{"Turning off a feature gate the API server cannot serve", `gate="DRADeviceTaintRules"`, `reason="the API server (v` + v + "."}
	}
	var log []byte
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		var err error
		if log, err = os.ReadFile(s.LogPath); err != nil {
			return false, nil
		}
		for _, line := range strings.Split(string(log), "\n") {
			if containsAll(line, want) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no line of the scheduler's log says %q:\n%s", want, tail(string(log), 40))
	}
	createPods(t, cardPods(ns, "p", "", 2)...)
	waitBound(t, ns, podsNamed("p-0", "p-1"))
}

// TestRefusesAnOlderAPIServer: against an API server older than 1.34 the
// scheduler refuses to start, at once, with a message naming the server's
// version and the supported range (SPEC §6), and so does kubectl cardinal.
func TestRefusesAnOlderAPIServer(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major":"1","minor":"33","gitVersion":"v1.33.5","platform":"linux/amd64"}`)
	}))
	defer server.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: old, cluster: {server: %q}}]
users: [{name: old, user: {token: x}}]
contexts: [{name: old, context: {cluster: old, user: old}}]
current-context: old
`, server.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: %s
`, kubeconfig, builder.SchedulerName)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name string
		args []string
	}{
		{"cardinal-scheduler", []string{"--config=" + config, "--secure-port=0"}},
		{"kubectl-cardinal", []string{"--kubeconfig=" + kubeconfig, "queues"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, filepath.Join(env.root, "bin", run.name), run.args...).CombinedOutput()
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			t.Errorf("%s did not stop within 30s against a v1.33.5 server:\n%s", run.name, tail(string(out), 20))
			continue
		}
		if err == nil {
			t.Errorf("%s exited 0 against a v1.33.5 server:\n%s", run.name, tail(string(out), 20))
		}
		for _, want := range []string{"v1.33.5", "1.34 through 1.37"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s's refusal does not name %s:\n%s", run.name, want, tail(string(out), 20))
			}
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
