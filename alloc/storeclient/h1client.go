package storeclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// MaxIdleConnsPerHost is how many kept-alive connections the default
// client holds per store member. It should cover the callers'
// concurrency: with fewer, every burst above it closes connections as
// they come back and dials (over TLS: handshakes) new ones.
const MaxIdleConnsPerHost = 256

// maxIdleTime is how long a kept connection may wait for its next call.
// The store's server closes one idle for 2 minutes; taking it well before
// that spares most calls a write into a connection already closed.
const maxIdleTime = time.Minute

// h1Client is the Client's default connect.HTTPClient: HTTP/1.1 with
// keep-alive, where each call writes its request and reads its answer on
// the calling goroutine. net/http's Transport hands every call to a write
// goroutine and a read goroutine of its connection and back; on the
// 2-core bench box that made the client cost three times the CPU per
// ReserveSegment of loadgen's raw client. Request writing and response
// parsing are net/http's own (Request.Write, ReadResponse): chunked or
// sized bodies, Connection: close, all as net/http does.
//
//   - A connection is used by one call at a time and kept (up to
//     MaxIdleConnsPerHost per member, for maxIdleTime) only after its
//     response body was read to the end and closed, with no error and no
//     Connection: close.
//   - The request's context bounds the whole call, the body's reading
//     included: when it ends, the connection's deadline is set in the past
//     (so blocked reads and writes return) and the connection is dropped.
//   - https dials with tlsconf.Current(tls) at each new connection, so a
//     changed CA file is trusted from then on; a kept connection made
//     under another CA pool is dropped instead of reused. ALPN offers only
//     http/1.1 (the store's fast front serves it).
//   - A kept connection that fails before any byte of the answer arrived
//     (the server closed it while idle) is retried once on a new one, as
//     net/http retries on a closed idle connection: the store client's
//     calls are safe to repeat (it retries them anyway).
//   - No proxy (HTTP_PROXY is not consulted): store members are dialed
//     directly.
type h1Client struct {
	tls    *tls.Config
	dialer net.Dialer

	mu   sync.Mutex
	idle map[string][]*h1Conn // by scheme://host, most recently used last
}

type h1Conn struct {
	nc   net.Conn
	br   *bufio.Reader
	wbuf bytes.Buffer // the request, written with one Write
	key  string
	cfg  *tls.Config // what an https connection was dialed with
	used time.Time   // when it was last put back
}

func newH1Client(tc *tls.Config) *h1Client {
	return &h1Client{tls: tc, dialer: net.Dialer{Timeout: 30 * time.Second}, idle: map[string][]*h1Conn{}}
}

// errStale marks a kept connection that failed before the answer began.
var errStale = errors.New("kept connection closed by the server")

// Do is connect.HTTPClient's one method.
func (c *h1Client) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, fmt.Errorf("storeclient: unsupported scheme %q", req.URL.Scheme)
	}
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		conn, err := c.get(ctx, req.URL.Scheme, req.URL.Host, !retried)
		if err != nil {
			return nil, err
		}
		resp, err := c.exchange(ctx, conn, req, body)
		if err == nil {
			return resp, nil
		}
		if errors.Is(err, errStale) && !retried && ctx.Err() == nil {
			continue
		}
		if ctx.Err() != nil {
			// The context's end is why the connection failed.
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
}

// readBody takes the whole request body (store requests are small; the
// body must be at hand to send head and body in one write and to retry).
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	if req.ContentLength > 0 {
		b := make([]byte, req.ContentLength)
		if _, err := io.ReadFull(req.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(req.Body)
}

// exchange writes req on conn and reads the answer's head. A reused
// connection's failure before the answer began is errStale.
func (c *h1Client) exchange(ctx context.Context, conn *h1Conn, req *http.Request, body []byte) (*http.Response, error) {
	reused := !conn.used.IsZero()
	stop := context.AfterFunc(ctx, func() { _ = conn.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = conn.nc.Close()
		return nil, err
	}
	out := *req
	out.Body, out.GetBody, out.ContentLength = nil, nil, int64(len(body))
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
	}
	conn.wbuf.Reset()
	if err := out.Write(&conn.wbuf); err != nil {
		return fail(err)
	}
	if _, err := conn.nc.Write(conn.wbuf.Bytes()); err != nil {
		if reused {
			err = fmt.Errorf("%w: %v", errStale, err)
		}
		return fail(err)
	}
	if _, err := conn.br.Peek(1); err != nil {
		if reused {
			err = fmt.Errorf("%w: %v", errStale, err)
		}
		return fail(err)
	}
	resp, err := http.ReadResponse(conn.br, req)
	if err != nil {
		return fail(err)
	}
	resp.Body = &h1Body{rc: resp.Body, c: c, conn: conn, stop: stop, keep: !resp.Close}
	return resp, nil
}

// aLongTimeAgo is a deadline that has passed: blocked I/O returns at once.
var aLongTimeAgo = time.Unix(1, 0)

// h1Body gives the connection back when the answer was read whole.
type h1Body struct {
	rc      io.ReadCloser
	c       *h1Client
	conn    *h1Conn
	stop    func() bool
	keep    bool
	eof     bool
	failed  bool
	closeMu sync.Once
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		b.failed = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	var err error
	b.closeMu.Do(func() {
		if !b.eof {
			// Not read to the end: what is left would be read as the next
			// answer.
			b.keep = false
		}
		err = b.rc.Close()
		// stop false: the context ended and the deadline is (or is about to
		// be) in the past; the connection is of no further use.
		if !b.stop() || !b.keep || b.failed || err != nil {
			_ = b.conn.nc.Close()
			return
		}
		b.c.put(b.conn)
	})
	return err
}

// get takes a kept connection for scheme://host (when reuse) or dials one.
func (c *h1Client) get(ctx context.Context, scheme, host string, reuse bool) (*h1Conn, error) {
	key := scheme + "://" + host
	var cur *tls.Config
	if scheme == "https" {
		cur = tlsconf.Current(c.tls)
	}
	if reuse {
		now := time.Now()
		c.mu.Lock()
		conns := c.idle[key]
		for len(conns) > 0 {
			conn := conns[len(conns)-1]
			conns[len(conns)-1] = nil
			conns = conns[:len(conns)-1]
			if now.Sub(conn.used) > maxIdleTime || conn.cfg != cur {
				_ = conn.nc.Close()
				continue
			}
			c.idle[key] = conns
			c.mu.Unlock()
			return conn, nil
		}
		c.idle[key] = conns
		c.mu.Unlock()
	}
	return c.dial(ctx, scheme, host, key, cur)
}

func (c *h1Client) dial(ctx context.Context, scheme, host, key string, cur *tls.Config) (*h1Conn, error) {
	addr := host
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := "80"
		if scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(host, port)
	}
	nc, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if scheme == "https" {
		var cfg *tls.Config
		if cur != nil {
			cfg = cur.Clone()
		} else {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			h, _, err := net.SplitHostPort(addr)
			if err != nil {
				h = host
			}
			cfg.ServerName = h
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &h1Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), key: key, cfg: cur}, nil
}

func (c *h1Client) put(conn *h1Conn) {
	conn.used = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	conns := c.idle[conn.key]
	if len(conns) >= MaxIdleConnsPerHost {
		_ = conn.nc.Close()
		return
	}
	if conn.wbuf.Cap() > 64<<10 {
		conn.wbuf = bytes.Buffer{} // do not keep a large request's buffer
	}
	c.idle[conn.key] = append(conns, conn)
}

// CloseIdleConnections closes every kept connection.
func (c *h1Client) CloseIdleConnections() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, conns := range c.idle {
		for _, conn := range conns {
			_ = conn.nc.Close()
		}
		delete(c.idle, k)
	}
}
