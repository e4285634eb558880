package soak

import (
	"context"
	"fmt"
	"io"
	"log"
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
	kindRead        = "read"
	kindWatch       = "watch"
)

// The faults, by what the scheduler sees.
const (
	faultDelay    = "delay"   // the write lands late
	faultConflict = "409"     // refused as a conflict, not made
	faultError    = "500"     // refused as a server error, not made
	faultLost     = "lost"    // made, but the answer is a server error
	faultTimeout  = "timeout" // held, then a gateway timeout, not made
	faultThrottle = "429"     // refused as too many requests, to retry after a second
	faultCut      = "cut"     // a watch that ends early, its connection broken
	faultNone     = "none"
)

// Proxy sits on loopback between the schedulers and kube-apiserver and
// injects faults into the writes they make (binds, pod and status patches,
// Queue and PodGroup status writes, pod deletions), into their reads (gets
// and lists fail or time out) and into their watches (cut after a moment).
// Leader election passes untouched: a lost lease is a test of its own.
type Proxy struct {
	URL string

	server *http.Server
	mu     sync.Mutex
	rng    *rand.Rand
	// rate is the chance that a faultable write is faulted, and twice the
	// chance for a read or watch; 0 turns faults off.
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
	// A watch cut on purpose is no error worth a line.
	rp.ErrorLog = log.New(io.Discard, "", 0)
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
		kind := classify(r)
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
		case faultThrottle:
			w.Header().Set("Retry-After", "1")
			writeStatus(w, http.StatusTooManyRequests, "TooManyRequests", "too many requests, please try again later (injected)")
		case faultCut:
			// The reverse proxy aborts the connection when its context
			// ends mid-stream: the watcher sees it broken and watches again.
			ctx, cancel := context.WithTimeout(r.Context(), delay)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
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
	rate := p.rate
	faults := []string{faultDelay, faultConflict, faultError, faultLost, faultTimeout}
	switch kind {
	case kindRead:
		rate, faults = p.rate/2, []string{faultDelay, faultError, faultThrottle, faultTimeout}
	case kindWatch:
		rate, faults = p.rate/2, []string{faultCut}
	}
	if rate == 0 || p.rng.Float64() >= rate {
		return faultNone, 0
	}
	fault := faults[p.rng.IntN(len(faults))]
	if p.counts[kind] == nil {
		p.counts[kind] = map[string]int{}
	}
	p.counts[kind][fault]++
	return fault, time.Duration(100+p.rng.IntN(1900)) * time.Millisecond
}

// classify names the faultable request r is, or "": a read or watch of
// anything but leases; a write whose path ends .../pods/NAME/binding,
// .../<resource>/NAME/status, or .../pods/NAME for a deletion.
func classify(r *http.Request) string {
	method, path := r.Method, r.URL.Path
	parts := strings.Split(strings.Trim(path, "/"), "/")
	n := len(parts)
	if method == http.MethodGet {
		// Resources, not discovery: /api/v1/<resource>..., /apis/<group>/<version>/<resource>...
		resource := parts[0] == "api" && n >= 3 || parts[0] == "apis" && n >= 4
		if !resource || strings.Contains(path, "/leases") {
			return ""
		}
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
			return kindWatch
		}
		return kindRead
	}
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
