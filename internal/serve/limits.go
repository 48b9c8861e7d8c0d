package serve

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Limits bound what one caller, with or without a token, can make the
// process hold: time for each read, connections, HTTP/2 streams and the
// bytes of request bodies being read. Every one is a flag of both
// binaries (docs/security.md, "Limits").
type Limits struct {
	// HeaderTimeout bounds a request's head from its first byte (and a new
	// connection's TLS handshake and first request head from its start).
	HeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sent nothing for
	// this long.
	IdleTimeout time.Duration
	// BodyTimeout bounds the reading of a whole request body, from the
	// moment its head was read, on the HTTP/1.1 front and on net/http
	// (HTTP/1.1 and HTTP/2 alike).
	BodyTimeout time.Duration
	// BodyMinRate is the slowest a body without a Content-Length (chunked,
	// or HTTP/2 without the header) may arrive, in bytes per second
	// averaged from its start, after a first second of grace.
	BodyMinRate int64
	// MaxBodyBytesInFlight bounds the request body bytes read and not yet
	// answered, all requests together; a request that would pass it is
	// answered resource_exhausted.
	MaxBodyBytesInFlight int64
	// MaxConns bounds open connections; MaxConnsPerAddr those from one
	// client IP address. Over either, a new connection is answered 503
	// (plain HTTP) or closed before its TLS handshake. 0: no bound.
	MaxConns, MaxConnsPerAddr int
	// HTTP2MaxStreams bounds the concurrent streams of one HTTP/2
	// connection.
	HTTP2MaxStreams int
}

// DefaultLimits are the flags' defaults. The timeouts leave a client on a
// slow link ample time for the largest legitimate request (a few hundred
// KiB for NextSeqs of 10,000 keys) while an idle or trickling one is cut
// off in seconds; the connection bounds stay well below the 20,000
// descriptors a service usually gets, so the process sheds load before it
// runs out of them.
func DefaultLimits() Limits {
	return Limits{
		HeaderTimeout:        10 * time.Second,
		IdleTimeout:          2 * time.Minute,
		BodyTimeout:          10 * time.Second,
		BodyMinRate:          1024,
		MaxBodyBytesInFlight: 64 << 20,
		MaxConns:             10000,
		MaxConnsPerAddr:      1000,
		HTTP2MaxStreams:      100,
	}
}

// Register adds the limit flags to fs with DefaultLimits' values.
func (l *Limits) Register(fs *flag.FlagSet) {
	d := DefaultLimits()
	fs.DurationVar(&l.HeaderTimeout, "header-timeout", d.HeaderTimeout, "bound of a request head from its first byte, and of a new connection's TLS handshake and first head")
	fs.DurationVar(&l.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a kept-alive connection idle this long")
	fs.DurationVar(&l.BodyTimeout, "body-timeout", d.BodyTimeout, "bound of reading a whole request body, from its head (HTTP/1.1 front, net/http, HTTP/2)")
	fs.Int64Var(&l.BodyMinRate, "body-min-rate", d.BodyMinRate, "slowest a body without Content-Length (chunked) may arrive, bytes/s averaged from its start after 1s of grace; 0: no rate, only --body-timeout")
	fs.Int64Var(&l.MaxBodyBytesInFlight, "max-body-bytes-in-flight", d.MaxBodyBytesInFlight, "request body bytes read and not yet answered, all requests together; over it a request is answered resource_exhausted")
	fs.IntVar(&l.MaxConns, "max-conns", d.MaxConns, "open connections at most; more are answered 503 and closed (closed at once under TLS); 0: no bound")
	fs.IntVar(&l.MaxConnsPerAddr, "max-conns-per-addr", d.MaxConnsPerAddr, "open connections from one client IP address at most, answered as --max-conns; 0: no bound")
	fs.IntVar(&l.HTTP2MaxStreams, "http2-max-streams", d.HTTP2MaxStreams, "concurrent streams of one HTTP/2 connection")
}

// Check returns the problems with the values.
func (l Limits) Check() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--header-timeout", l.HeaderTimeout}, {"--idle-timeout", l.IdleTimeout}, {"--body-timeout", l.BodyTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", d.name, d.v))
		}
	}
	if l.BodyMinRate < 0 || l.MaxConns < 0 || l.MaxConnsPerAddr < 0 {
		errs = append(errs, errors.New("--body-min-rate, --max-conns and --max-conns-per-addr cannot be negative"))
	}
	if l.MaxBodyBytesInFlight <= 0 {
		errs = append(errs, fmt.Errorf("--max-body-bytes-in-flight must be positive, got %d", l.MaxBodyBytesInFlight))
	}
	if l.HTTP2MaxStreams <= 0 {
		errs = append(errs, fmt.Errorf("--http2-max-streams must be positive, got %d", l.HTTP2MaxStreams))
	}
	return errs
}

// orDefaults fills zero fields from DefaultLimits, for servers built
// without flags (tests).
func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = d.HeaderTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = d.BodyTimeout
	}
	if l.MaxBodyBytesInFlight <= 0 {
		l.MaxBodyBytesInFlight = d.MaxBodyBytesInFlight
	}
	if l.HTTP2MaxStreams <= 0 {
		l.HTTP2MaxStreams = d.HTTP2MaxStreams
	}
	return l
}
