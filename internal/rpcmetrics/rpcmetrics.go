// Package rpcmetrics counts and times every RPC a process serves, by
// procedure, protocol and Connect code, in the rpc_ naming of
// OpenTelemetry's RPC conventions (rpc.server.duration as a Prometheus
// histogram in seconds) with a grpc-prometheus style counter beside it.
//
// Guarantees:
//   - Every call that reaches a service's interceptor chain (connect-go,
//     all three protocols) or that the HTTP/1.1 front answers itself (H1)
//     is counted exactly once: the front answers a request or declines it
//     to net/http, never both, so nothing is counted twice.
//   - Failures carry the Connect code the client saw ("ok" for success),
//     refusals by the auth interceptor included, because Interceptor is
//     installed outside it.
//   - Not counted: requests connect-go rejects before its interceptors run
//     (an undecodable body, a wrong HTTP method or content type), health
//     checks and reflection, and non-RPC routes (the Leaf API, /metrics).
//   - Bounded: a call is labelled with its procedure only if the process
//     registered it (New, Add); any other path (a caller's words, such as
//     an unknown path the auth gate refuses) is counted under service and
//     method "unknown". Protocols and codes are connect-go's few, so the
//     series are at most procedures x protocols x codes, whatever callers
//     send.
package rpcmetrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets are the duration histogram's bounds in seconds: IDs served from
// memory take tens of microseconds, a Raft write a few milliseconds, a
// store outage seconds.
var Buckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics holds one process's RPC series. Register it with a registry.
type Metrics struct {
	handled  *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// ok caches the series of successful calls by procedure, the hot
	// path, so a call does no label hashing. Copy on write: procedures
	// are few and fixed, and only those of known get an entry.
	mu    sync.Mutex
	ok    atomic.Pointer[map[string]*series]
	known atomic.Pointer[map[string]bool]
}

// Unknown is the service and method label of a call to a path that is
// no registered procedure.
const Unknown = "unknown"

type series struct {
	handled  prometheus.Counter
	duration prometheus.Observer
}

// New returns empty metrics that label calls of procedures
// ("/pkg.Service/Method") by name and every other path as Unknown.
func New(procedures ...string) *Metrics {
	m := &Metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rpc_server_handled_total",
			Help: "RPCs completed on the server, by service, method, protocol (connect, grpc, grpcweb) and Connect code (ok on success).",
		}, []string{"rpc_service", "rpc_method", "rpc_protocol", "rpc_code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rpc_server_duration_seconds",
			Help:    "Time to serve an RPC, from the interceptor (or the HTTP/1.1 front) receiving it to its answer, by service, method and Connect code.",
			Buckets: Buckets,
		}, []string{"rpc_service", "rpc_method", "rpc_code"}),
	}
	m.ok.Store(&map[string]*series{})
	m.known.Store(&map[string]bool{})
	m.Add(procedures...)
	return m
}

// Add registers more procedures: a process learns what it serves only
// once its component is open, after its interceptor was made.
func (m *Metrics) Add(procedures ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.known.Load()
	next := make(map[string]bool, len(old)+len(procedures))
	for k := range old {
		next[k] = true
	}
	for _, p := range procedures {
		next[p] = true
	}
	m.known.Store(&next)
}

// label is procedure if it is registered, else Unknown's path.
func (m *Metrics) label(procedure string) string {
	if (*m.known.Load())[procedure] {
		return procedure
	}
	return unknownPath
}

const unknownPath = "/" + Unknown + "/" + Unknown

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.handled.Describe(ch)
	m.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.handled.Collect(ch)
	m.duration.Collect(ch)
}

// Observe records one finished call of procedure ("/pkg.Service/Method")
// over protocol with code ("ok" on success) that took d.
func (m *Metrics) Observe(procedure, protocol, code string, d time.Duration) {
	procedure = m.label(procedure)
	if code == "ok" && protocol == "connect" {
		s := m.okSeries(procedure)
		s.handled.Inc()
		s.duration.Observe(d.Seconds())
		return
	}
	svc, method := split(procedure)
	m.handled.WithLabelValues(svc, method, protocol, code).Inc()
	m.duration.WithLabelValues(svc, method, code).Observe(d.Seconds())
}

// okSeries returns the cached series of successful Connect calls of
// procedure, making them on first use. The map lookup with a converted
// key does not allocate.
func (m *Metrics) okSeries(procedure string) *series {
	if s, ok := (*m.ok.Load())[procedure]; ok {
		return s
	}
	procedure = m.label(procedure)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.ok.Load()
	if s, ok := old[procedure]; ok {
		return s
	}
	svc, method := split(procedure)
	s := &series{
		handled:  m.handled.WithLabelValues(svc, method, "connect", "ok"),
		duration: m.duration.WithLabelValues(svc, method, "ok"),
	}
	next := make(map[string]*series, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[procedure] = s
	m.ok.Store(&next)
	return s
}

// split turns "/seqsvr.v1.AllocService/NextIDs" into its service and
// method.
func split(procedure string) (service, method string) {
	if procedure == unknownPath {
		return Unknown, Unknown
	}
	p := strings.TrimPrefix(procedure, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, ""
}

// IsProcedure reports whether path names an RPC: "/pkg.Service/Method",
// one slash after the first and a dot in the service name.
func IsProcedure(path []byte) bool {
	if len(path) < 4 || path[0] != '/' {
		return false
	}
	slash, dot := -1, false
	for i := 1; i < len(path); i++ {
		switch path[i] {
		case '/':
			if slash >= 0 {
				return false
			}
			slash = i
		case '.':
			if slash < 0 {
				dot = true
			}
		}
	}
	return dot && slash > 1 && slash < len(path)-1
}
