package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/faults"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/rpcmetrics"
	"github.com/seqsvr/seqsvr/web"
)

// DefaultMaxBodyBytes bounds every request body. The largest legitimate
// request is a few hundred bytes; 1 MiB leaves room without letting one
// client make the process buffer something huge.
const DefaultMaxBodyBytes = 1 << 20

// CompressMinBytes is the smallest response connect-go gzips when the
// client accepts gzip. connect-go's default is 0, so every answer, even a
// 3-byte ID, went through a pooled gzip writer whose reset alone was 29% of
// the allocsvr's CPU under a connect-go client (pprof). Responses here are
// small and mostly travel a LAN: only really large ones (NextIDs with
// thousands of IDs, ListTags pages) are worth the CPU.
const CompressMinBytes = 32 << 10

// ConnectOptions are the handler options every Connect service of the
// process must be built with: the body limit, panic recovery (so a bug in
// one request answers internal instead of killing the process) and the
// compression threshold.
func ConnectOptions(maxBodyBytes int64, logger *slog.Logger) []connect.HandlerOption {
	if logger == nil {
		logger = slog.Default()
	}
	if maxBodyBytes <= 0 {
		maxBodyBytes = DefaultMaxBodyBytes
	}
	return []connect.HandlerOption{
		connect.WithReadMaxBytes(int(maxBodyBytes)),
		connect.WithCompressMinBytes(CompressMinBytes),
		errs.RecoverOption(logger), // the front's recovery too (connectfast)
	}
}

// Options configure the process's HTTP handler.
type Options struct {
	Logger *slog.Logger
	// Services are the Connect services to mount (a routes.Table's, or a
	// generated New...Handler's with its fully-qualified proto name).
	Services []routes.Service
	// Routes are plain HTTP endpoints keyed by http.ServeMux pattern
	// ("GET /api/segment/get/{tag}"). Their bodies are bounded too.
	Routes map[string]http.Handler
	// Ready reports whether the process can serve; nil means always ready.
	Ready func(context.Context) error
	// Gatherer backs /metrics; nil means prometheus.DefaultGatherer.
	Gatherer     prometheus.Gatherer
	MaxBodyBytes int64
	// Pprof mounts /debug/pprof/ (opt-in, --pprof).
	Pprof bool
	// Auth guards Routes (as the Leaf API: 401/403 one-line answers) and
	// gRPC reflection; nil leaves them open. The services guard
	// themselves with Env.ConnectOptions; with Auth set every procedure
	// and Leaf call is also checked on its headers before its body is
	// read (gate). /healthz, /readyz and grpc.health.v1 stay open;
	// /metrics is open without its tag and space names (metricsHandler).
	Auth *auth.Authorizer
	// RPCMetrics counts the calls the gate refuses (connect-go never sees
	// them, so its interceptor cannot); nil counts nothing.
	RPCMetrics *rpcmetrics.Metrics
	// Page is the status page served at "/" (web.StorePage or
	// web.AllocPage; "" for none). It is open like /healthz: it holds no
	// data, and calls the RPCs with the token its user gives it.
	Page string
}

// NewHandler builds the mux with every endpoint and wraps it in CORS.
func NewHandler(o Options) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Ready == nil {
		o.Ready = func(context.Context) error { return nil }
	}
	if o.Gatherer == nil {
		o.Gatherer = prometheus.DefaultGatherer
	}
	copts := ConnectOptions(o.MaxBodyBytes, o.Logger)
	mux := http.NewServeMux()
	names := make([]string, 0, len(o.Services))
	rt := &router{services: map[string]http.Handler{}, mux: mux}
	for _, s := range o.Services {
		mux.Handle(s.Path, s.Handler)
		rt.services[s.Path] = s.Handler
		names = append(names, s.Name)
	}
	mux.Handle(grpchealth.NewHandler(&readyChecker{ready: o.Ready, names: names}, copts...))
	reflector := grpcreflect.NewStaticReflector(names...)
	ropts := copts
	if o.Auth != nil {
		ropts = append(ropts[:len(ropts):len(ropts)], connect.WithInterceptors(o.Auth.Interceptor()))
	}
	mux.Handle(grpcreflect.NewHandlerV1(reflector, ropts...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, ropts...))

	for pattern, h := range o.Routes {
		// The token before the size: a caller without one is told so
		// before its body is looked at. The gate has already refused a
		// Leaf path (auth.LeafPrefix) on its headers; this check stays
		// because a route's pattern may lie outside that prefix, where
		// the gate does not look.
		mux.Handle(pattern, o.Auth.Leaf(limitBody(h, o.MaxBodyBytes)))
	}
	if o.Page != "" {
		for pattern, h := range web.Routes(o.Page) {
			mux.Handle(pattern, h)
		}
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := o.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", metricsHandler(o.Gatherer, o.Auth))
	if o.Pprof {
		mountPprof(mux)
	}
	if h := faults.AdminHandler(); h != nil {
		mux.Handle("/debug/faults/", limitBody(h, o.MaxBodyBytes))
	}
	return withCORS(gate(o.Auth, o.RPCMetrics, rt))
}

// router hands calls to the process's own Connect services straight to
// their handler, and everything else to the mux. The hot RPCs skip the
// mux's pattern matching (3% of the allocsvr's CPU under load, pprof); the
// services' handlers reject unknown procedures themselves.
type router struct {
	services map[string]http.Handler // "/seqsvr.v1.AllocService/" -> handler
	mux      *http.ServeMux
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if len(p) > 1 {
		if i := strings.IndexByte(p[1:], '/'); i > 0 {
			if h, ok := rt.services[p[:i+2]]; ok {
				h.ServeHTTP(w, r)
				return
			}
		}
	}
	rt.mux.ServeHTTP(w, r)
}

func limitBody(h http.Handler, n int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, n)
		h.ServeHTTP(w, r)
	})
}

// readyChecker answers grpc.health.v1 from the same Ready function as
// /readyz, so load balancers using either see the same thing.
type readyChecker struct {
	ready func(context.Context) error
	names []string
}

func (c *readyChecker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	known := req.Service == ""
	for _, n := range c.names {
		known = known || n == req.Service
	}
	if !known {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown service %q", req.Service))
	}
	if c.ready(ctx) != nil {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}
