package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// Server is the process's single HTTP server: HTTP/1.1 and h2c on one
// listener. With the front on (--fast-http, the default) an HTTP/1.1 front
// (package h1) answers the hot routes set with SetFast and hands every
// other connection to net/http; with it off net/http serves everything.
// Until SetHandler is called net/http answers 503 (and /healthz 200), so
// a process can bind its port before its component is ready.
//
// Under TLS (ListenTLS) the process serves HTTPS with HTTP/1.1 and h2 by
// ALPN. With the front on, it accepts, runs each connection's handshake in
// that connection's goroutine (within net/http's handshake timeout,
// client certificates checked there when --tls-client-ca asks), then
// serves "http/1.1" connections as it does plain ones and gives "h2" ones
// to net/http untouched, as the *tls.Conn (see h1.Server.ServeTLS); a
// request handed off after the front read from the connection still has
// Request.TLS. With it off net/http's ServeTLS does all of it.
//
// With SetAuth the front answers only requests whose token is allowed for
// the route; it declines every other one, so net/http's checks (the
// header gate, see gate) give the 401/403 answers: one code path for
// refusals, identical on both. A request whose head is refused is handed
// over before the front waits for its body (h1.Server.Admit).
//
// SetLimits bounds what any caller can hold (Limits): connections, the
// time to read a head and a body, HTTP/2 streams, body bytes in flight.
type Server struct {
	front *h1.Server // nil with the front off
	srv   *http.Server
	raw   net.Listener // the bound socket
	ln    net.Listener // raw, behind the connection bounds of SetLimits
	tls   *tls.Config  // nil: plain HTTP and h2c
	guard *bodyGuard
	errc  chan error
	h     atomic.Pointer[http.Handler]
	fast  atomic.Pointer[h1.Handler]
	auth  atomic.Pointer[auth.Authorizer]
}

// Listen binds addr (use 127.0.0.1:0 in tests). fastHTTP puts the HTTP/1.1
// front before net/http.
func Listen(addr string, fastHTTP bool, logger *slog.Logger) (*Server, error) {
	return listen(addr, fastHTTP, nil, logger)
}

// ListenTLS binds addr to serve HTTPS with cfg; fastHTTP puts the
// HTTP/1.1 front behind the handshake (see Server).
func ListenTLS(addr string, fastHTTP bool, cfg *tls.Config, logger *slog.Logger) (*Server, error) {
	return listen(addr, fastHTTP, cfg, logger)
}

func listen(addr string, fastHTTP bool, tlsCfg *tls.Config, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	if tlsCfg != nil {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	s := &Server{raw: ln, ln: ln, tls: tlsCfg}
	s.srv = &http.Server{
		Handler:        http.HandlerFunc(s.serveHTTP),
		Protocols:      &p,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		TLSConfig:      tlsCfg,
	}
	if fastHTTP {
		s.front = &h1.Server{HTTP: s.srv, Fast: h1.HandlerFunc(s.serveFast), Admit: s.admit, Logger: logger}
	}
	s.SetLimits(Limits{})
	return s, nil
}

// SetLimits applies l (zero fields: DefaultLimits', zero connection bounds:
// none). It must be called before Start.
func (s *Server) SetLimits(l Limits) {
	l = l.orDefaults()
	s.srv.ReadHeaderTimeout, s.srv.IdleTimeout = l.HeaderTimeout, l.IdleTimeout
	// The receive windows bound what one connection can make net/http
	// buffer of bodies nobody reads yet; the largest legitimate body
	// still flows, a window at a time.
	s.srv.HTTP2 = &http.HTTP2Config{
		MaxConcurrentStreams:          l.HTTP2MaxStreams,
		MaxReceiveBufferPerConnection: 256 << 10,
		MaxReceiveBufferPerStream:     64 << 10,
	}
	s.guard = &bodyGuard{timeout: l.BodyTimeout, minRate: l.BodyMinRate, inFlight: l.MaxBodyBytesInFlight}
	if s.front != nil {
		s.front.IdleTimeout, s.front.BodyTimeout = l.IdleTimeout, l.BodyTimeout
	}
	s.ln = newLimitListener(s.raw, l.MaxConns, l.MaxConnsPerAddr, s.tls == nil)
}

// SetHandler sets what net/http serves. It may be called while serving.
func (s *Server) SetHandler(h http.Handler) { s.h.Store(&h) }

// SetFast sets the routes the HTTP/1.1 front answers itself; until it is
// called (and for what it declines) everything goes to net/http. It may be
// called while serving, and does nothing with the front off.
func (s *Server) SetFast(h h1.Handler) { s.fast.Store(&h) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.guard.wrap(w, r)()
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	// Starting: a retryable answer rather than a refused connection.
	if r.URL.Path == "/healthz" {
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	http.Error(w, "starting", http.StatusServiceUnavailable)
}

// SetAuth makes the front decline every request a would refuse (see
// Server).
func (s *Server) SetAuth(a *auth.Authorizer) { s.auth.Store(a) }

func (s *Server) serveFast(req *h1.Request, resp *h1.Response) bool {
	h := s.fast.Load()
	if h == nil {
		return false
	}
	// The token is checked here for every request the front would answer:
	// admit is asked only about heads whose body is still coming, so a
	// bodiless GET or a body that came with its head never meets it. A
	// path no token guards is net/http's.
	if a := s.auth.Load(); a != nil {
		if guarded, ok := frontCheck(a, req); !guarded || !ok {
			return false
		}
	}
	return (*h).ServeH1(req, resp)
}

// admit is the front's check on a head whose body is still coming: a
// request the header gate would refuse is handed over before the front
// waits for its body, and net/http's gate refuses it at once.
func (s *Server) admit(req *h1.Request) bool {
	a := s.auth.Load()
	if a == nil {
		return true
	}
	guarded, ok := frontCheck(a, req)
	return !guarded || string(req.Method) == http.MethodOptions || ok
}

// frontCheck is the front's one token check (serveFast and admit ask it):
// whether req's path is guarded (auth.PathRole, the rule net/http's gate
// follows) and whether its token is allowed there, on the connection's
// memo, so asking twice about one request costs one lookup.
func frontCheck(a *auth.Authorizer, req *h1.Request) (guarded, ok bool) {
	need, guarded := auth.PathRole(a.Roles(), req.Path)
	return guarded, allows(a, req, need)
}

// allows checks req's token for need, on the connection's memo.
func allows(a *auth.Authorizer, req *h1.Request, need auth.Role) bool {
	v, n := req.Header("Authorization")
	if n != 1 {
		return need == auth.Open
	}
	// Clients send the same token with every request on a kept-alive
	// connection: the connection's memo spares all but the first the
	// hash and the walk through the token list.
	m, _ := req.Memo.(*auth.Memo)
	if m == nil {
		m = new(auth.Memo)
		req.Memo = m
	}
	return a.AllowsMemo(m, v, need)
}

// RegisterMetrics exports the connection bounds' gauge and counter (with
// --max-conns or --max-conns-per-addr set) and the front's counters:
// requests it answered and connections it handed to net/http, by reason.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	if l, ok := s.ln.(*limitListener); ok {
		open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seqsvr_http_open_connections",
			Help: "Connections open on the API port (bounded by --max-conns).",
		}, func() float64 { n, _ := l.counts(); return float64(n) })
		shed := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "seqsvr_http_shed_connections_total",
			Help: "Connections refused over --max-conns or --max-conns-per-addr.",
		}, func() float64 { _, n := l.counts(); return float64(n) })
		for _, c := range []prometheus.Collector{open, shed} {
			if err := reg.Register(c); err != nil {
				return err
			}
		}
	}
	if s.front == nil {
		return nil
	}
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

// Start begins serving in the background; Done reports how it ended.
func (s *Server) Start() {
	s.errc = make(chan error, 1)
	go func() {
		var err error
		switch {
		case s.tls != nil && s.front != nil:
			err = s.front.ServeTLS(s.ln)
		case s.tls != nil:
			// The certificate comes from TLSConfig.GetCertificate.
			err = s.srv.ServeTLS(s.ln, "", "")
		case s.front != nil:
			err = s.front.Serve(s.ln)
		default:
			err = s.srv.Serve(s.ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.errc <- err
	}()
}

// Done delivers, once, Serve's error after Start: nil after a clean
// Shutdown.
func (s *Server) Done() <-chan error { return s.errc }

// Shutdown stops accepting and waits for in-flight requests until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.front != nil {
		return s.front.Shutdown(ctx)
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close() // out of time: what is left goes too, as the front does
	}
	return err
}
