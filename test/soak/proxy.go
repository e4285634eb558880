package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The writes a proxy may fault, by what they do.
const (
	kindBind        = "bind"
	kindPodStatus   = "pod status"
	kindQueueStatus = "Queue status"
	kindGroupStatus = "PodGroup status"
	kindPodDelete   = "pod deletion"
)

// The faults, by what the scheduler sees.
const (
	faultDelay    = "delay"   // the write lands late
	faultConflict = "409"     // refused as a conflict, not made
	faultError    = "500"     // refused as a server error, not made
	faultLost     = "lost"    // made, but the answer is a server error
	faultTimeout  = "timeout" // held, then a gateway timeout, not made
	faultNone     = "none"
)

// Proxy sits on loopback between the schedulers and kube-apiserver and
// injects faults into the writes they make: binds, pod and status patches,
// Queue and PodGroup status writes and pod deletions. Reads, watches and
// leader election pass untouched.
type Proxy struct {
	URL string

	server *http.Server
	mu     sync.Mutex
	rng    *rand.Rand
	// rate is the chance that a faultable write is faulted; 0 turns faults off.
	rate float64
	// counts are faults injected, by kind of write and fault.
	counts map[string]map[string]int
}

// NewProxy listens on a free loopback port and forwards to target through
// transport.
func NewProxy(target string, transport http.RoundTripper, seed uint64) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), rng: rand.New(rand.NewPCG(seed, 0x5eed)), counts: map[string]map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() == nil {
			writeStatus(w, http.StatusBadGateway, "BadGateway", err.Error())
		}
	}
	p.server = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: time.Minute}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// SetRate sets the chance that a faultable write is faulted.
func (p *Proxy) SetRate(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = rate
}

// Counts returns the faults injected so far, by kind of write and fault.
func (p *Proxy) Counts() map[string]map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]map[string]int{}
	for k, m := range p.counts {
		out[k] = map[string]int{}
		for f, n := range m {
			out[k][f] = n
		}
	}
	return out
}

// Close stops serving.
func (p *Proxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = p.server.Shutdown(ctx)
	_ = p.server.Close()
}

func (p *Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := classify(r.Method, r.URL.Path)
		fault, delay := p.pick(kind)
		switch fault {
		case faultDelay:
			sleep(r.Context(), delay)
			next.ServeHTTP(w, r)
		case faultConflict:
			writeStatus(w, http.StatusConflict, "Conflict", "the object has been modified; please apply your changes to the latest version and try again (injected)")
		case faultError:
			writeStatus(w, http.StatusInternalServerError, "InternalError", "an error on the server has prevented the request from succeeding (injected)")
		case faultLost:
			next.ServeHTTP(discard{header: http.Header{}}, r)
			writeStatus(w, http.StatusInternalServerError, "InternalError", "an error on the server has prevented the request from succeeding (injected, after it was made)")
		case faultTimeout:
			sleep(r.Context(), delay)
			writeStatus(w, http.StatusGatewayTimeout, "Timeout", "the request timed out (injected)")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// pick decides a write's fault, and how long a delay or timeout holds it.
func (p *Proxy) pick(kind string) (string, time.Duration) {
	if kind == "" {
		return faultNone, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate == 0 || p.rng.Float64() >= p.rate {
		return faultNone, 0
	}
	faults := []string{faultDelay, faultConflict, faultError, faultLost, faultTimeout}
	fault := faults[p.rng.IntN(len(faults))]
	if p.counts[kind] == nil {
		p.counts[kind] = map[string]int{}
	}
	p.counts[kind][fault]++
	return fault, time.Duration(100+p.rng.IntN(1900)) * time.Millisecond
}

// classify names the faultable write a request is, or "": paths end
// .../pods/NAME/binding, .../<resource>/NAME/status, or .../pods/NAME for a
// deletion.
func classify(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	n := len(parts)
	if n < 3 {
		return ""
	}
	sub, resource := parts[n-1], parts[n-3]
	write := method == http.MethodPatch || method == http.MethodPut
	switch {
	case method == http.MethodPost && sub == "binding" && resource == "pods":
		return kindBind
	case write && sub == "status" && resource == "pods":
		return kindPodStatus
	case write && sub == "status" && resource == "queues":
		return kindQueueStatus
	case write && sub == "status" && resource == "podgroups":
		return kindGroupStatus
	case method == http.MethodDelete && parts[n-2] == "pods":
		return kindPodDelete
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// writeStatus answers with a metav1.Status, as kube-apiserver does.
func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, message, reason, code)
}

// discard is a response writer that drops the answer of a write whose
// answer is lost.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
