package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seqsvr/seqsvr/internal/faults"
	"github.com/seqsvr/seqsvr/internal/h1"
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
		connect.WithRecover(func(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
			logger.ErrorContext(ctx, "panic in handler", "procedure", spec.Procedure, "panic", fmt.Sprint(p))
			return connect.NewError(connect.CodeInternal, errors.New("internal error"))
		}),
	}
}

// Service is one Connect service to mount, as returned by a generated
// New...Handler together with its fully-qualified proto name.
type Service struct {
	Name    string // e.g. seqsvrv1connect.StoreServiceName
	Path    string
	Handler http.Handler
}

// Options configure the process's HTTP handler.
type Options struct {
	Logger   *slog.Logger
	Services []Service
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
	mux.Handle(grpcreflect.NewHandlerV1(reflector, copts...))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector, copts...))

	for pattern, h := range o.Routes {
		mux.Handle(pattern, limitBody(h, o.MaxBodyBytes))
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
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	if o.Pprof {
		mountPprof(mux)
	}
	if h := faults.AdminHandler(); h != nil {
		mux.Handle("/debug/faults/", limitBody(h, o.MaxBodyBytes))
	}
	return withCORS(rt)
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

// Server is the process's single HTTP server: HTTP/1.1 and h2c on one
// listener. An HTTP/1.1 front (package h1) answers the hot routes set with
// SetFast and hands every other connection to net/http.
type Server struct {
	front *h1.Server
	srv   *http.Server
	ln    net.Listener
	log   *slog.Logger
	errc  chan error
	fast  atomic.Pointer[h1.Handler]
}

// Listen binds addr (use 127.0.0.1:0 in tests) and prepares h.
func Listen(addr string, h http.Handler, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           h,
		Protocols:         &p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	s := &Server{srv: srv, ln: ln, log: logger}
	s.front = &h1.Server{HTTP: srv, Fast: h1.HandlerFunc(s.serveFast), Logger: logger}
	return s, nil
}

// SetFast sets the routes the HTTP/1.1 front answers itself; until it is
// called (and for what it declines) everything goes to net/http. It may be
// called while serving: the storesvr binds before its store is open.
func (s *Server) SetFast(h h1.Handler) { s.fast.Store(&h) }

func (s *Server) serveFast(req *h1.Request, resp *h1.Response) bool {
	h := s.fast.Load()
	return h != nil && (*h).ServeH1(req, resp)
}

// RegisterMetrics exports the front's counters: requests it answered and
// connections it handed to net/http, by reason.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	served := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "seqsvr_http_fast_requests_total",
		Help: "Requests answered by the HTTP/1.1 front without net/http.",
	}, func() float64 { return float64(s.front.Stats().Served) })
	if err := reg.Register(served); err != nil {
		return err
	}
	for reason := range s.front.Stats().HandOffs {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "seqsvr_http_handoffs_total",
			Help:        "Connections the HTTP/1.1 front handed to net/http, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(s.front.Stats().HandOffs[reason]) })
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Addr is the bound address (with the real port when :0 was asked).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve blocks until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve() error {
	err := s.front.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for in-flight requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.front.Shutdown(ctx)
}

// Start begins serving in the background; Wait ends it.
func (s *Server) Start() {
	s.errc = make(chan error, 1)
	go func() { s.errc <- s.Serve() }()
}

// Wait blocks until ctx is cancelled (main ties it to SIGINT/SIGTERM) or
// the server fails, then shuts down, giving in-flight requests up to grace.
func (s *Server) Wait(ctx context.Context, grace time.Duration) error {
	select {
	case err := <-s.errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := s.Shutdown(sctx)
	<-s.errc
	return err
}

// Run is Start then Wait.
func (s *Server) Run(ctx context.Context, grace time.Duration) error {
	s.Start()
	return s.Wait(ctx, grace)
}
