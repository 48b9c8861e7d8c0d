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
	"time"

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
// Connect interceptor, the Leaf wrapper) give the 401/403 answers: one
// code path for refusals, identical on both.
type Server struct {
	front *h1.Server // nil with the front off
	srv   *http.Server
	ln    net.Listener
	tls   *tls.Config // nil: plain HTTP and h2c
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
	s := &Server{ln: ln, tls: tlsCfg}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		Protocols:         &p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		TLSConfig:         tlsCfg,
	}
	if fastHTTP {
		s.front = &h1.Server{HTTP: s.srv, Fast: h1.HandlerFunc(s.serveFast), Logger: logger}
	}
	return s, nil
}

// SetHandler sets what net/http serves. It may be called while serving.
func (s *Server) SetHandler(h http.Handler) { s.h.Store(&h) }

// SetFast sets the routes the HTTP/1.1 front answers itself; until it is
// called (and for what it declines) everything goes to net/http. It may be
// called while serving, and does nothing with the front off.
func (s *Server) SetFast(h h1.Handler) { s.fast.Store(&h) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
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
	if a := s.auth.Load(); a != nil {
		v, n := req.Header("Authorization")
		if n != 1 {
			return false
		}
		// Clients send the same token with every request on a kept-alive
		// connection: the connection's memo spares all but the first the
		// hash and the walk through the token list.
		m, _ := req.Memo.(*auth.Memo)
		if m == nil {
			m = new(auth.Memo)
			req.Memo = m
		}
		if !a.AllowsMemo(m, v, auth.PathRole(req.Path)) {
			return false
		}
	}
	return (*h).ServeH1(req, resp)
}

// RegisterMetrics exports the front's counters: requests it answered and
// connections it handed to net/http, by reason. With the front off there
// are none.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
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
