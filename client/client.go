package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// Client calls a set of allocsvrs. It is safe for concurrent use; make
// one per process and share it.
type Client struct {
	cfg      config
	http     connect.HTTPClient
	copts    []connect.ClientOption
	eps      []*endpoint
	next     atomic.Uint64 // round-robin cursor
	closed   atomic.Bool
	bg       context.Context // background refills and routing refreshes
	stop     context.CancelFunc
	wg       sync.WaitGroup
	bgMu     sync.Mutex // orders goBG's wg.Add before Close's Wait
	scheme   string
	ownersMu sync.Mutex
	owners   map[string]*endpoint // by base URL: configured and learned from routing tables

	bufMu   sync.Mutex
	buffers atomic.Pointer[map[string]*tagBuffer]
	lastBuf atomic.Pointer[tagBuffer] // the buffer of the last tag asked for
	// rangesOffUntil (Unix nanos) is when loads try NextIDRanges again
	// after an allocsvr answered it unimplemented.
	rangesOffUntil atomic.Int64

	routes sync.Map // space -> *spaceRoutes
}

// New returns a client for the allocsvrs at endpoints: base URLs
// ("https://10.0.0.7:8080") or host:port (then https:// when a TLS
// option is given, http:// otherwise). It contacts nothing until the
// first call.
func New(endpoints []string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if len(endpoints) == 0 {
		return nil, errors.New("client: no endpoints")
	}
	c := &Client{cfg: cfg, owners: map[string]*endpoint{}, scheme: "http://"}
	if cfg.tlsConfig != nil || cfg.caFile != "" {
		c.scheme = "https://"
	}
	if cfg.httpClient != nil {
		c.http = cfg.httpClient
	} else {
		hc, err := newHTTPClient(cfg)
		if err != nil {
			return nil, err
		}
		c.http = hc
	}
	// Answers are lists of varints: gzip saves few bytes and costs the
	// client more CPU than the IDs themselves.
	c.copts = append(c.copts, connect.WithAcceptCompression("gzip", nil, nil))
	if cfg.protocol == ProtocolGRPC {
		c.copts = append(c.copts, connect.WithGRPC())
	}
	ics := cfg.interceptors
	if cfg.token != "" {
		ics = append([]connect.Interceptor{auth.Bearer(cfg.token)}, ics...)
	}
	if len(ics) > 0 {
		c.copts = append(c.copts, connect.WithInterceptors(ics...))
	}
	for _, u := range endpoints {
		u = c.normalize(u)
		if u == "" {
			return nil, errors.New("client: empty endpoint")
		}
		if _, dup := c.owners[u]; dup {
			continue
		}
		ep := c.newEndpoint(u)
		c.owners[u] = ep
		c.eps = append(c.eps, ep)
	}
	empty := map[string]*tagBuffer{}
	c.buffers.Store(&empty)
	c.bg, c.stop = context.WithCancel(context.Background())
	return c, nil
}

func (c *Client) normalize(u string) string {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	if u != "" && !strings.Contains(u, "://") {
		u = c.scheme + u
	}
	return u
}

func (c *Client) newEndpoint(u string) *endpoint {
	return &endpoint{
		url:   u,
		alloc: seqsvrv1connect.NewAllocServiceClient(c.http, u, c.copts...),
		seq:   seqsvrv1connect.NewSeqServiceClient(c.http, u, c.copts...),
	}
}

// owner is the endpoint for a section owner's URL from a routing table,
// made on first sight (owners need not be among the configured
// endpoints).
func (c *Client) owner(u string) *endpoint {
	u = c.normalize(u)
	if u == "" {
		return nil
	}
	c.ownersMu.Lock()
	defer c.ownersMu.Unlock()
	ep, ok := c.owners[u]
	if !ok {
		ep = c.newEndpoint(u)
		c.owners[u] = ep
	}
	return ep
}

func newHTTPClient(cfg config) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Many goroutines share one client: keep their HTTP/1.1 connections.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	tr.ForceAttemptHTTP2 = true
	tlsCfg := cfg.tlsConfig
	if cfg.caFile != "" {
		pem, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return nil, fmt.Errorf("client: CA file: %w", err)
		}
		if tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if tlsCfg.RootCAs == nil {
			tlsCfg.RootCAs = x509.NewCertPool()
		}
		if !tlsCfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: CA file %s holds no PEM certificate", cfg.caFile)
		}
	}
	tr.TLSClientConfig = tlsCfg
	if cfg.protocol == ProtocolGRPC {
		// gRPC needs HTTP/2: h2 by ALPN over TLS, h2c in the clear.
		var p http.Protocols
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	return &http.Client{Transport: tr}, nil
}

// Close stops the background refills and routing refreshes and waits for
// them; the IDs still in local buffers are dropped (never handed out,
// never handed to anyone else). Calls after Close answer ErrClosed.
func (c *Client) Close() error {
	c.bgMu.Lock()
	was := c.closed.Swap(true)
	c.bgMu.Unlock()
	if was {
		return nil
	}
	c.stop()
	c.wg.Wait()
	if hc, ok := c.http.(*http.Client); ok && c.cfg.httpClient == nil {
		hc.CloseIdleConnections()
	}
	return nil
}

// Endpoints lists the configured allocsvr base URLs.
func (c *Client) Endpoints() []string {
	out := make([]string, len(c.eps))
	for i, ep := range c.eps {
		out[i] = ep.url
	}
	return out
}

// goBG runs f in the background unless the client is closed, and says
// whether it did.
func (c *Client) goBG(f func(ctx context.Context)) bool {
	// Under bgMu, so no Add can race with Close's Wait.
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.bg)
	}()
	return true
}

// do runs call on one endpoint after another until it succeeds, fails in
// a way no other endpoint can fix (errs.Judge, the allocsvr caller's
// rule), or ctx ends. prefer (may be nil, and need not be configured) is
// tried first while healthy. Endpoints that fail are ejected; one attempt
// of errs.Retry is a round over every endpoint, and rounds are spaced by
// the client's backoff. Every call this package makes is safe to repeat
// (see the package documentation), so a failure whose outcome is unknown
// is retried too.
func (c *Client) do(ctx context.Context, what string, prefer *endpoint, snowflake bool,
	call func(ctx context.Context, ep *endpoint) error) (*endpoint, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, what, nil)
	}
	p := errs.Policy{Caller: caller(snowflake), Backoff: c.cfg.backoff}
	var done *endpoint
	tried := make(map[*endpoint]bool, len(c.eps)+1)
	err := errs.Retry(ctx, p, func(ctx context.Context, _ int) error {
		clear(tried)
		var last error
		for ep := c.pick(prefer, tried); ep != nil; ep = c.pick(prefer, tried) {
			actx, cancel := context.WithTimeout(ctx, c.cfg.attemptTimout)
			err := call(actx, ep)
			cancel()
			if err == nil {
				if ep.ok() {
					c.cfg.logger.Info("seqsvr client: endpoint recovered", "endpoint", ep.url)
				}
				done = ep
				return nil
			}
			if ctx.Err() != nil || !errs.Judge(p.Caller, err).Retry {
				return err
			}
			d := ep.fail(time.Now(), c.cfg.maxEject)
			c.cfg.logger.Warn("seqsvr client: endpoint ejected", "endpoint", ep.url, "call", what, "for", d, "err", err)
			tried[ep], last = true, err
		}
		if last == nil {
			return fmt.Errorf("%w: %s: no endpoint to call", errs.Unavailable, what)
		}
		return last // every endpoint failed once in this round
	})
	var st *errs.Stopped
	switch {
	case err == nil:
		return done, nil
	case errors.As(err, &st) && st.Ctx != nil:
		return nil, ctxError(ctx, what, st.Last)
	case st != nil:
		return nil, st.Last
	}
	return nil, err
}

// pick chooses the endpoint for the next attempt: prefer while healthy,
// then the healthy configured endpoints in turn, then the ejected ones
// whose ejection ends first (a call never fails just because every
// endpoint failed recently). nil means every endpoint was tried.
func (c *Client) pick(prefer *endpoint, tried map[*endpoint]bool) *endpoint {
	now := time.Now()
	if prefer != nil && !tried[prefer] {
		if out, _ := prefer.ejected(now); !out {
			return prefer
		}
	}
	n := uint64(len(c.eps))
	start := c.next.Add(1)
	var best *endpoint
	var bestUntil time.Time
	for i := range n {
		ep := c.eps[(start+i)%n]
		if tried[ep] {
			continue
		}
		out, until := ep.ejected(now)
		if !out {
			return ep
		}
		if best == nil || until.Before(bestUntil) {
			best, bestUntil = ep, until
		}
	}
	if best == nil && prefer != nil && !tried[prefer] {
		return prefer
	}
	return best
}
