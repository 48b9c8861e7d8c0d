package client

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Protocol is the wire protocol a Client speaks.
type Protocol int

const (
	// ProtocolConnect is the Connect protocol with binary protobuf, over
	// HTTP/1.1 or HTTP/2 (the default).
	ProtocolConnect Protocol = iota
	// ProtocolGRPC is gRPC: HTTP/2 only (h2 over TLS, h2c over plain HTTP).
	ProtocolGRPC
)

// An Option configures New.
type Option func(*config) error

type config struct {
	token         string
	tlsConfig     *tls.Config
	caFile        string
	httpClient    *http.Client
	protocol      Protocol
	logger        *slog.Logger
	timeout       time.Duration
	attemptTimout time.Duration
	maxEject      time.Duration
	// backoff spaces the rounds of a call over every endpoint.
	backoff      errs.Backoff
	bufferSize   int
	interceptors []connect.Interceptor
}

// defaultConfig is every default of a Client, defined here only: New
// starts from it and each Option sets a value or refuses a zero one, so
// nothing else defaults. It stays unexported: the public API is the
// options, whose documentation names these values.
func defaultConfig() config {
	return config{
		timeout:       10 * time.Second,
		attemptTimout: 3 * time.Second,
		maxEject:      5 * time.Second,
		backoff:       errs.Backoff{Min: 20 * time.Millisecond, Max: 500 * time.Millisecond},
		logger:        slog.New(slog.DiscardHandler),
	}
}

// WithToken sends "Authorization: Bearer token" on every call (servers
// started with --auth-file need a token with role client).
func WithToken(token string) Option {
	return func(c *config) error {
		if token == "" {
			return fmt.Errorf("client: empty token")
		}
		c.token = token
		return nil
	}
}

// WithTLSConfig is the TLS configuration for https:// endpoints (a copy
// is used; set RootCAs for a private CA, Certificates for mutual TLS).
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) error {
		c.tlsConfig = cfg.Clone()
		return nil
	}
}

// WithCAFile trusts the PEM certificates in path for https:// endpoints,
// instead of the system roots. With WithTLSConfig too, the CA is added
// to that configuration.
func WithCAFile(path string) Option {
	return func(c *config) error {
		c.caFile = path
		return nil
	}
}

// WithHTTPClient sends every call through hc instead of a client New
// builds; WithTLSConfig, WithCAFile and the protocol's transport needs
// are then the caller's business.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		c.httpClient = hc
		return nil
	}
}

// WithProtocol picks the wire protocol (default ProtocolConnect).
func WithProtocol(p Protocol) Option {
	return func(c *config) error {
		if p != ProtocolConnect && p != ProtocolGRPC {
			return fmt.Errorf("client: unknown protocol %d", p)
		}
		c.protocol = p
		return nil
	}
}

// WithLogger logs endpoint ejections, recoveries and routing refreshes
// (default: nothing is logged).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l != nil {
			c.logger = l
		}
		return nil
	}
}

// WithTimeout bounds a call, retries included, when the caller's context
// has no deadline (default 10 s). A context deadline always wins.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("client: timeout %v must be positive", d)
		}
		c.timeout = d
		return nil
	}
}

// WithAttemptTimeout bounds one attempt on one endpoint (default 3 s), so
// a hung or paused server costs at most this much before the call moves
// on to another endpoint.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("client: attempt timeout %v must be positive", d)
		}
		c.attemptTimout = d
		return nil
	}
}

// WithLocalBuffer turns the local ID buffer on for NextID and NextIDs:
// per tag, two batches of size IDs (1..MaxLocalBuffer) held in the
// process as ranges (a few words a batch, whatever its size), the next
// one fetched in the background once 10% of the current one is used,
// with one NextIDRanges call (NextIDs calls with an older allocsvr). See
// the package documentation for what it gives up.
func WithLocalBuffer(size int) Option {
	return func(c *config) error {
		if size < 1 || size > MaxLocalBuffer {
			return fmt.Errorf("client: local buffer size %d out of range 1..%d", size, MaxLocalBuffer)
		}
		c.bufferSize = size
		return nil
	}
}

// WithInterceptors adds connect interceptors to every call (metrics,
// tracing).
func WithInterceptors(ics ...connect.Interceptor) Option {
	return func(c *config) error {
		c.interceptors = append(c.interceptors, ics...)
		return nil
	}
}
