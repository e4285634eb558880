package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"
)

var schedulerSeq atomic.Int32

// Scheduler is a running cardinal-scheduler process.
type Scheduler struct {
	*Process
	// LogPath is the file the scheduler writes its log to.
	LogPath string
	// Port is its secure port, which serves /metrics.
	Port int
}

// StartScheduler runs bin/cardinal-scheduler with the scheduler configuration
// at configPath, as a user would, connected to this control plane as the
// scheduler's service account. extraArgs are kube-scheduler flags.
func (cp *ControlPlane) StartScheduler(configPath string, extraArgs ...string) (*Scheduler, error) {
	return cp.StartSchedulerBinary(filepath.Join(cp.BinDir, "cardinal-scheduler"), configPath, false, extraArgs...)
}

// StartSchedulerBinary runs another kube-scheduler build the same way, as
// the scheduler's service account or, with admin, as the administrator (for
// schedulers whose RBAC config/ does not grant, such as the benchmarks' peers).
func (cp *ControlPlane) StartSchedulerBinary(binary, configPath string, admin bool, extraArgs ...string) (*Scheduler, error) {
	return cp.startScheduler(binary, configPath, admin, "", extraArgs...)
}

// StartSchedulerVia runs bin/cardinal-scheduler as StartScheduler does, but
// reaching kube-apiserver at server (plain http on loopback, e.g. a proxy
// that injects faults, forwarding with SchedulerTransport) instead of
// directly.
func (cp *ControlPlane) StartSchedulerVia(server, configPath string, extraArgs ...string) (*Scheduler, error) {
	return cp.startScheduler(filepath.Join(cp.BinDir, "cardinal-scheduler"), configPath, false, server, extraArgs...)
}

// StartSchedulerBinaryVia runs binary (a cardinal-scheduler, e.g. one
// built with -race) as StartSchedulerVia does.
func (cp *ControlPlane) StartSchedulerBinaryVia(binary, server, configPath string, extraArgs ...string) (*Scheduler, error) {
	return cp.startScheduler(binary, configPath, false, server, extraArgs...)
}

func (cp *ControlPlane) startScheduler(binary, configPath string, admin bool, server string, extraArgs ...string) (*Scheduler, error) {
	n := schedulerSeq.Add(1)
	kubeconfig, err := cp.writeKubeconfig(fmt.Sprintf("scheduler-%d.kubeconfig", n), !admin, server)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(cp.Dir, fmt.Sprintf("scheduler-config-%d.yaml", n))
	if err := withKubeconfig(configPath, kubeconfig, cfgPath); err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(cp.Dir, fmt.Sprintf("scheduler-%d.log", n))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--config=" + cfgPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
	}, extraArgs...)
	// A crash prints every goroutine's stack, not only the one that failed.
	p, err := startProcessEnv(logFile, []string{"GOTRACEBACK=all"}, binary, args...)
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	return &Scheduler{Process: p, LogPath: logPath, Port: ports[0]}, nil
}

// localClient reads schedulers' secure ports, whose certificates are
// self-signed.
var localClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Minute} //nolint:gosec // a local scheduler's self-signed certificate

// Get reads path (e.g. /metrics) from the scheduler's secure port; the
// scheduler must allow it without credentials
// (--authorization-always-allow-paths).
func (s *Scheduler) Get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", s.Port, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := localClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, err
}

// withKubeconfig copies the scheduler configuration at src to dst with
// clientConnection.kubeconfig pointing at kubeconfig; nothing else changes.
func withKubeconfig(src, kubeconfig, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	conn["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = conn
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o600)
}
