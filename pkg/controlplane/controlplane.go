// Package controlplane runs a real Kubernetes control plane, etcd and
// kube-apiserver, as local processes, for Cardinal's integration tests and for
// `make demo`. Both binaries are built from the module graph (go.mod tool
// directives), so a fresh machine needs nothing but Go.
//
// The apiserver authenticates two users by static token: an administrator in
// system:masters, and the scheduler's service account identity, which holds
// only what config/rbac grants it. Running the scheduler as that identity is
// how the tests prove the shipped RBAC is enough.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// SchedulerUser is the identity the scheduler runs as: the service account
// that config/rbac binds.
const (
	SchedulerUser      = "system:serviceaccount:cardinal-system:cardinal-scheduler"
	adminUser          = "cardinal-admin"
	adminToken         = "cardinal-admin-token"
	schedulerToken     = "cardinal-scheduler-token"
	readyTimeout       = 2 * time.Minute
	serviceClusterCIDR = "10.96.0.0/16"
)

// Options configure a control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver and cardinal-scheduler. Empty means
	// $CARDINAL_BIN_DIR, else bin/ at the module root.
	BinDir string
	// Log receives the processes' output. Nil means a file in the work dir.
	Log io.Writer
	// Controllers, when set, also runs kube-controller-manager with only
	// these controllers (e.g. deployment-controller), for tests that need
	// workloads to behave as in a cluster. Controllers that expect kubelets
	// (node lifecycle, taints) would evict from the simulated nodes.
	Controllers []string
	// PriorityAndFairness serves requests as a cluster's kube-apiserver
	// does, with API Priority and Fairness: a burst of writes waits in its
	// priority level's queues. Off, a burst over 200 concurrent writes (as
	// a gang's binds can be) is answered 429, retried a second later.
	PriorityAndFairness bool
	// APIServerVersion, when set (e.g. "1.34"), runs BinDir's
	// kube-apiserver-<version> (built by `make bin/kube-apiserver-<version>`
	// from hack/kube-apiserver) instead of kube-apiserver, the one Cardinal
	// is built with: the version matrix of SPEC §6.
	APIServerVersion string
	// APIServerArgs are more kube-apiserver flags (feature gates,
	// --runtime-config).
	APIServerArgs []string
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Dir is the control plane's work directory, removed by Stop.
	Dir string
	// BinDir is where the binaries were found.
	BinDir string
	// URL is the apiserver's https address.
	URL string

	caData      []byte
	log         io.Writer
	logFile     *os.File
	etcd        *Process
	apiserver   *Process
	controllers *Process
	fairness    bool
	apiBinary   string
	apiArgs     []string
}

// Start launches etcd and kube-apiserver and waits until the apiserver is ready.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cardinal-controlplane-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, BinDir: binDir, log: opts.Log, fairness: opts.PriorityAndFairness,
		apiBinary: filepath.Join(binDir, "kube-apiserver"), apiArgs: opts.APIServerArgs}
	if v := opts.APIServerVersion; v != "" {
		cp.apiBinary = filepath.Join(binDir, "kube-apiserver-"+v)
		if _, err := os.Stat(cp.apiBinary); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("kube-apiserver %s not found in %s: run `make bin/kube-apiserver-%s`", v, binDir, v)
		}
	}
	if cp.log == nil {
		if cp.logFile, err = os.Create(filepath.Join(dir, "controlplane.log")); err != nil {
			return nil, err
		}
		cp.log = cp.logFile
	}
	if err := cp.start(ctx); err != nil {
		cp.Stop()
		return nil, err
	}
	if len(opts.Controllers) > 0 {
		if err := cp.startControllers(opts.Controllers); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	return cp, nil
}

// startControllers runs kube-controller-manager as the administrator with
// only the given controllers, serving nothing.
func (cp *ControlPlane) startControllers(controllers []string) error {
	bin := filepath.Join(cp.BinDir, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("kube-controller-manager not found in %s: run `make bin/kube-controller-manager`", cp.BinDir)
	}
	kubeconfig, err := cp.WriteKubeconfig("controller-manager.kubeconfig", false)
	if err != nil {
		return err
	}
	cp.controllers, err = StartProcess(cp.log, bin,
		"--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	)
	return err
}

func (cp *ControlPlane) start(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cp.etcd, err = StartProcess(cp.log, filepath.Join(cp.BinDir, "etcd"),
		"--name=default",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	)
	if err != nil {
		return err
	}

	if err := writeServiceAccountKey(filepath.Join(cp.Dir, "sa.key")); err != nil {
		return err
	}
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:serviceaccounts,system:serviceaccounts:cardinal-system,system:authenticated\"\n",
		adminToken, adminUser, adminUser, schedulerToken, SchedulerUser, "cardinal-scheduler")
	if err := os.WriteFile(filepath.Join(cp.Dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	certDir := filepath.Join(cp.Dir, "certs")
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	args := append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]),
		"--cert-dir=" + certDir,
		"--token-auth-file=" + filepath.Join(cp.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(cp.Dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(cp.Dir, "sa.key"),
		"--service-cluster-ip-range=" + serviceClusterCIDR,
		// No kubelets run here, and no controller-manager beyond the
		// controllers Options name: nothing would create service account
		// tokens or lift node condition taints.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--enable-priority-and-fairness=" + strconv.FormatBool(cp.fairness),
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}, cp.apiArgs...)
	cp.apiArgs = args
	return cp.startAPIServer(ctx)
}

func (cp *ControlPlane) startAPIServer(ctx context.Context) error {
	var err error
	if cp.apiserver, err = StartProcess(cp.log, cp.apiBinary, cp.apiArgs...); err != nil {
		return err
	}
	return cp.waitReady(ctx, filepath.Join(cp.Dir, "certs"))
}

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling upgrade of
// a control plane does), starts it again with the same flags, certificates
// and etcd, and waits until it is ready. Clients keep their configuration:
// the address and serving certificate stay the same.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.apiserver.Stop()
	return cp.startAPIServer(ctx)
}

// waitReady polls /readyz until the apiserver answers ok, and fails early
// when a process exits.
func (cp *ControlPlane) waitReady(ctx context.Context, certDir string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range []*Process{cp.etcd, cp.apiserver} {
			if err := p.Exited(); err != nil {
				return false, fmt.Errorf("%w (see %s)", err, cp.logPath())
			}
		}
		if cp.caData == nil {
			ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
			if err != nil {
				return false, nil
			}
			cp.caData = ca
		}
		cs, err := kubernetes.NewForConfig(cp.Config())
		if err != nil {
			return false, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// Config is a client config for the administrator.
func (cp *ControlPlane) Config() *rest.Config {
	return cp.configFor(adminToken)
}

// SchedulerTransport is an http transport to the apiserver as the
// scheduler's identity: what a proxy in front of the apiserver forwards
// with, since a kubeconfig gives no credentials to a plain-http server.
func (cp *ControlPlane) SchedulerTransport() (http.RoundTripper, error) {
	return rest.TransportFor(cp.SchedulerConfig())
}

// SchedulerConfig is a client config for the scheduler's identity.
func (cp *ControlPlane) SchedulerConfig() *rest.Config {
	return cp.configFor(schedulerToken)
}

func (cp *ControlPlane) configFor(token string) *rest.Config {
	return &rest.Config{
		Host:            cp.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.caData},
		QPS:             500,
		Burst:           1000,
	}
}

// WriteKubeconfig writes a kubeconfig for the administrator (scheduler false)
// or the scheduler's identity (scheduler true) and returns its path.
func (cp *ControlPlane) WriteKubeconfig(name string, scheduler bool) (string, error) {
	return cp.writeKubeconfig(name, scheduler, "")
}

// writeKubeconfig is WriteKubeconfig reaching the apiserver at server
// (plain http) instead, unless server is "".
func (cp *ControlPlane) writeKubeconfig(name string, scheduler bool, server string) (string, error) {
	token := adminToken
	if scheduler {
		token = schedulerToken
	}
	cluster := &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthorityData: cp.caData}
	if server != "" {
		cluster = &clientcmdapi.Cluster{Server: server}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cardinal"] = cluster
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["cardinal"] = &clientcmdapi.Context{Cluster: "cardinal", AuthInfo: "user"}
	cfg.CurrentContext = "cardinal"
	path := filepath.Join(cp.Dir, name)
	return path, clientcmd.WriteToFile(*cfg, path)
}

// Stop kills the apiserver and etcd and removes the work directory.
func (cp *ControlPlane) Stop() {
	for _, p := range []*Process{cp.controllers, cp.apiserver, cp.etcd} {
		p.Stop()
	}
	if cp.logFile != nil {
		_ = cp.logFile.Close()
	}
	if os.Getenv("CARDINAL_KEEP_CONTROLPLANE") == "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

func (cp *ControlPlane) logPath() string {
	if cp.logFile != nil {
		return cp.logFile.Name()
	}
	return "the control plane log"
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// findBinDir finds the directory holding the control plane's binaries.
func findBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("CARDINAL_BIN_DIR")
	}
	if dir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "cardinal-scheduler"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make bin/%s` (or `make test`, which builds it)", b, dir, b)
		}
	}
	return filepath.Abs(dir)
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory; set CARDINAL_BIN_DIR")
		}
		dir = parent
	}
}
