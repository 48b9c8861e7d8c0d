package serve

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os/signal"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/rpcmetrics"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// Process is one binary as Run serves it.
type Process struct {
	Name   string // "storesvr", for log lines
	Addr   string // --http-addr
	Common Common
	Logger *slog.Logger // nil means slog.Default()
	// Open builds the process's component (a store, allocators) once the
	// port is bound; until it returns the server answers 503. ctx lives
	// until the server has drained, for the component's background work.
	Open func(ctx context.Context, env Env) (*App, error)
}

// Env is what Run hands Open.
type Env struct {
	Addr   string // the bound address (with the real port when :0 was asked)
	Logger *slog.Logger
	// Registry backs /metrics; the component registers its metrics here.
	Registry *prometheus.Registry
	// Fatal ends the process with err as its failure (a snowflake clock
	// check, say): the server shuts down as on a signal, and Run returns err.
	Fatal func(err error)
	// ConnectOptions are what every Connect service of the process must be
	// built with: ConnectOptions' and, with --auth-file, the auth
	// interceptor. A service built without them is open to anyone.
	ConnectOptions []connect.HandlerOption
	// Auth is the token check (nil without --auth-file).
	Auth *auth.Authorizer
	// TLSKeys is the process's --tls-cert pair (nil without TLS), which
	// its clients present to servers asking for a client certificate.
	TLSKeys *tlsconf.KeyPair
	// Scheme is how the process is called: "http" or "https".
	Scheme string
	// Stop is done once the process is asked to stop (SIGINT, SIGTERM):
	// an Open that waits (a storesvr deciding whether to bootstrap or
	// rejoin) gives up on it, and Run exits cleanly.
	Stop context.Context
	// ServeWhileStarting serves t's procedures, and /readyz from ready,
	// until Open returns (other calls still get 503 "starting"); see
	// startingHandler.
	ServeWhileStarting func(t routes.Table, ready func(context.Context) error)
}

// App is a component ready to serve.
type App struct {
	// Routes is what the component serves, each procedure and Leaf route
	// registered once: Run mounts its connect-go services (with
	// Env.ConnectOptions) and plain routes on net/http, and its front
	// routes on the HTTP/1.1 front (--fast-http).
	Routes routes.Table
	// Handler is the rest of what net/http serves; Run fills in the
	// logger, the metrics registry, the body bound and --pprof.
	Handler Options
	// Fast, when set, replaces the front routes of Routes: for tests of the
	// front itself, whose routes are no procedure.
	Fast h1.Handler
	// Attrs are logged with the "serving" line.
	Attrs []any
	// Handover, when set, runs on SIGINT/SIGTERM before the server stops
	// accepting: it gives up what other processes take over (the
	// allocsvr's per-key sections), so they move at once instead of after
	// the drain, while callers forwarded here still get an answer.
	Handover func()
	// Close releases the component once the server has drained.
	Close func()
}

// Binary is a binary's parsed configuration.
type Binary interface {
	// Process is what Run serves; Main sets its Name and Logger.
	Process() Process
}

// Main is a binary's whole life: parse its flags and SEQSVR_* variables
// (parse prints usage to its writer for --help and returns flag.ErrHelp),
// build the logger, Run until SIGINT or SIGTERM. It returns the exit
// code: 0, 1 when serving failed, 2 for bad flags.
func Main[B Binary](name string, args []string, getenv func(string) string, stderr io.Writer,
	parse func(args []string, getenv func(string) string, out io.Writer) (B, error)) int {
	b, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n(run %s --help for the flags)\n", name, err, name)
		return 2
	}
	p := b.Process()
	logger, err := p.Common.Log.NewLogger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	slog.SetDefault(logger)
	p.Name, p.Logger = name, logger
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, p); err != nil {
		logger.Error(name+" failed", "err", err)
		return 1
	}
	return 0
}

// Run binds p.Addr, serves 503 while Open builds the component, then the
// component's handler (and its fast routes, with --fast-http) until ctx
// ends, the component calls Fatal or the server fails. It then shuts down:
// no new connections, in-flight requests get --shutdown-grace to finish,
// the component's context ends, and its Close runs. It returns nil after a
// clean shutdown.
func Run(ctx context.Context, p Process) error {
	logger := p.Logger
	if logger == nil {
		logger = slog.Default()
	}
	reg := NewRegistry()
	authz, keys, tlsCfg, err := loadSecurity(p.Common.Security, logger)
	if err != nil {
		return err
	}
	var srv *Server
	if tlsCfg != nil {
		srv, err = ListenTLS(p.Addr, p.Common.FastHTTP, tlsCfg, logger)
	} else {
		srv, err = Listen(p.Addr, p.Common.FastHTTP, logger)
	}
	if err != nil {
		return err
	}
	srv.SetLimits(p.Common.Limits)
	srv.Start()
	hupCtx, stopHUP := context.WithCancel(ctx)
	defer stopHUP()
	reloadOnHUP(hupCtx, authz, logger)
	// life is the component's: it outlives ctx until the server drained.
	life, end := context.WithCancelCause(context.WithoutCancel(ctx))
	defer end(nil)
	sec := security{auth: authz, keys: keys, tls: tlsCfg != nil}
	app, err := open(life, ctx, p, srv, reg, logger, end, sec)
	if err != nil {
		_ = shutdown(srv, 0, logger)
		if ctx.Err() != nil {
			logger.Info(p.Name+" stopped while starting", "reason", err)
			return nil
		}
		return err
	}
	logger.Info(p.Name+" serving", append([]any{"http_addr", srv.Addr(), "fast_http", srv.front != nil,
		"tls", sec.tls, "mtls", p.Common.Security.TLSClientCA != "", "auth", authz != nil}, app.Attrs...)...)
	var serveErr error
	select {
	case <-ctx.Done():
		if app.Handover != nil {
			app.Handover()
		}
		serveErr = shutdown(srv, p.Common.ShutdownGrace, logger)
	case <-life.Done():
		serveErr = shutdown(srv, p.Common.ShutdownGrace, logger)
	case err := <-srv.Done():
		serveErr = fmt.Errorf("serve: %w", cmp.Or(err, errors.New("stopped")))
	}
	end(context.Canceled)
	if app.Close != nil {
		app.Close()
	}
	if cause := context.Cause(life); !errors.Is(cause, context.Canceled) {
		return cause
	}
	logger.Info(p.Name + " stopped")
	return serveErr
}

// security is what Run loaded for open.
type security struct {
	auth *auth.Authorizer
	keys *tlsconf.KeyPair
	tls  bool
}

// open builds the component and hands its routes to srv.
func open(ctx, stop context.Context, p Process, srv *Server, reg *prometheus.Registry, logger *slog.Logger, end context.CancelCauseFunc, sec security) (*App, error) {
	if err := srv.RegisterMetrics(reg); err != nil {
		return nil, err
	}
	// Per-RPC metrics: the interceptor goes first, outside the auth check,
	// so refusals are counted with their code; the front's answers are
	// counted by the same Metrics (rpcm.H1 below).
	rpcm := rpcmetrics.New()
	if err := reg.Register(rpcm); err != nil {
		return nil, err
	}
	copts := append(ConnectOptions(p.Common.MaxBodyBytes, logger), connect.WithInterceptors(rpcm.Interceptor()))
	env := Env{Addr: srv.Addr(), Logger: logger, Registry: reg, Fatal: end,
		ConnectOptions: copts, Auth: sec.auth, TLSKeys: sec.keys, Scheme: "http", Stop: stop}
	if sec.auth != nil {
		// The gate (NewHandler) checks every request on its headers
		// first; the interceptor is connect-go's own check, so a service
		// built with these options is guarded wherever it is mounted.
		env.ConnectOptions = append(env.ConnectOptions, connect.WithInterceptors(sec.auth.Interceptor()))
	}
	env.ServeWhileStarting = func(t routes.Table, ready func(context.Context) error) {
		rpcm.Add(procedureNames(t)...)
		sec.auth.SetRoles(roles(t))
		srv.SetHandler(startingHandler(t, ready, env.ConnectOptions, sec, reg, rpcm, p.Common.MaxBodyBytes, logger))
	}
	if sec.tls {
		env.Scheme = "https"
	}
	app, err := p.Open(ctx, env)
	if err != nil {
		return nil, err
	}
	rpcm.Add(procedureNames(app.Routes)...)
	sec.auth.SetRoles(roles(app.Routes))
	o := app.Handler
	o.Logger, o.Gatherer, o.Auth, o.RPCMetrics = logger, reg, sec.auth, rpcm
	fast := mount(&o, app, env.ConnectOptions, p.Common.MaxBodyBytes, logger)
	if sec.auth != nil {
		srv.SetAuth(sec.auth)
	}
	o.MaxBodyBytes, o.Pprof = p.Common.MaxBodyBytes, p.Common.Debug.Pprof
	srv.SetHandler(NewHandler(o))
	if fast != nil {
		srv.SetFast(rpcm.H1(fast))
	}
	return app, nil
}

// mount adds app.Routes to o and returns the front's routes: app.Fast
// when set, else the table's (nil when it has none).
func mount(o *Options, app *App, copts []connect.HandlerOption, maxBodyBytes int64, logger *slog.Logger) h1.Handler {
	t := app.Routes
	o.Services = append(o.Services, t.Services(copts...)...)
	all := t.HTTP()
	maps.Copy(all, o.Routes)
	o.Routes = all
	if app.Fast != nil {
		return app.Fast
	}
	if len(t.Procedures)+len(t.Routes) == 0 {
		return nil
	}
	return varyOrigin(t.Front(maxBodyBytes, logger))
}

// varyOrigin adds to the front's answers the Vary: Origin that net/http's
// CORS wrapper (withCORS) puts on every answer, so the front's are the
// same. The front itself declines any request with an Origin.
func varyOrigin(h h1.Handler) h1.Handler {
	return h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		if !h.ServeH1(req, resp) {
			return false
		}
		resp.SetHeader("Vary", "Origin")
		return true
	})
}

// shutdown stops srv, giving in-flight requests up to grace, and waits
// for Serve to return.
func shutdown(srv *Server, grace time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "grace", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if serr := <-srv.Done(); err == nil {
		err = serr
	}
	return err
}
