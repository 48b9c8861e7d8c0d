package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// BufferSize is each connection's read buffer: the largest request the
// front serves, head and body. Larger ones go to net/http.
const BufferSize = 4 << 10

// Server accepts connections on one listener, serves the requests Fast
// takes and hands everything else to HTTP.
type Server struct {
	HTTP *http.Server // serves what Fast does not; its Handler is the process's mux
	Fast Handler
	// IdleTimeout closes a connection that sent nothing for this long;
	// zero means HTTP.IdleTimeout, or 2 minutes when that is zero too.
	IdleTimeout time.Duration
	// BodyTimeout bounds the body of a request the front waits for, from
	// the moment its head is whole (the head has the header timeout);
	// zero keeps the head's deadline for the body too. A request still
	// incomplete then goes to net/http with the timeout as its read error.
	BodyTimeout time.Duration
	// Admit, when set, is asked once about each request whose head is
	// whole and whose body is still coming. If it returns false the
	// front waits for none of the body: the request goes to net/http at
	// once (reason "refused"), which is expected to refuse it without
	// reading the body either. The process uses it to check the token on
	// the headers (internal/serve).
	Admit  func(req *Request) bool
	Logger *slog.Logger

	mu       sync.Mutex
	ln       net.Listener
	tls      *tls.Config   // set by ServeTLS: each connection's handshake
	handoff  *chanListener // connections handed off at their first request, for HTTP
	cont     *http.Server  // serves connections handed off after the front answered on them
	contOff  *chanListener // those connections, for cont
	conns    map[*conn]struct{}
	shutting atomic.Bool
	httpDone chan struct{} // closed when the net/http server's Serve returns
	ctx      context.Context
	cancel   context.CancelFunc

	served   atomic.Uint64
	handoffs [numReasons]atomic.Uint64
}

// Stats are the front's counters since start.
type Stats struct {
	Served   uint64            // requests answered by the front
	HandOffs map[string]uint64 // connections handed to net/http, by reason
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	st := Stats{Served: s.served.Load(), HandOffs: map[string]uint64{}}
	for _, r := range handOffReasons {
		st.HandOffs[r.String()] = s.handoffs[r].Load()
	}
	return st
}

// Serve accepts on ln until Shutdown or Close, which make it return
// http.ErrServerClosed, as http.Server.Serve does.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, nil) }

// ServeTLS is Serve for HTTPS with HTTP.TLSConfig, which must hold a
// certificate (Certificates, GetCertificate or GetConfigForClient). Each
// connection's handshake runs in its own goroutine within the handshake
// timeout (see handshake); the front serves "http/1.1" (or no ALPN) and
// gives "h2" connections to HTTP as they are, which serves them as its own
// ServeTLS would.
//
// ALPN offers "h2" only when HTTP.TLSConfig.NextProtos lists it and
// HTTP.Protocols allows HTTP/2: net/http's Serve (which gets the h2
// connections) sets up HTTP/2 only then. "http/1.1" is always offered.
// Configurations from GetConfigForClient are used as they are.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.HTTP.TLSConfig == nil {
		return errors.New("h1: ServeTLS needs HTTP.TLSConfig")
	}
	// The handshakes get their own copy, taken before net/http starts:
	// net/http's Serve writes to HTTP.TLSConfig as it sets up HTTP/2.
	cfg := s.HTTP.TLSConfig.Clone()
	h2 := slices.Contains(cfg.NextProtos, "h2") && (s.HTTP.Protocols == nil || s.HTTP.Protocols.HTTP2())
	cfg.NextProtos = append(slices.DeleteFunc(slices.Clone(cfg.NextProtos), func(p string) bool {
		return p == "http/1.1" || p == "h2" && !h2
	}), "http/1.1")
	return s.serve(ln, cfg)
}

func (s *Server) serve(ln net.Listener, tlsCfg *tls.Config) error {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.IdleTimeout <= 0 {
		s.IdleTimeout = s.HTTP.IdleTimeout
	}
	if s.IdleTimeout <= 0 {
		s.IdleTimeout = 2 * time.Minute
	}
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("h1: Serve called twice")
	}
	if s.shutting.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln, s.tls = ln, tlsCfg
	s.handoff = newChanListener(ln.Addr())
	s.cont, s.contOff = continuing(s.HTTP), s.handoff
	if s.cont != s.HTTP {
		s.contOff = newChanListener(ln.Addr())
	}
	s.conns = map[*conn]struct{}{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.httpDone = make(chan struct{})
	var served sync.WaitGroup
	for _, hl := range s.httpServers() {
		served.Go(func() {
			_ = hl.srv.Serve(hl.ln) // ErrServerClosed once Shutdown or Close ran
		})
	}
	go func() {
		served.Wait()
		close(s.httpDone)
	}()
	s.mu.Unlock()

	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				// Closed under us, not by Shutdown: stop what Serve
				// started, so nothing serves on without a listener.
				_ = s.Close()
				return err
			}
			// EMFILE and the like: back off as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.Logger.Warn("accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := &conn{srv: s, nc: nc, raw: nc}
		if s.tls != nil {
			// No I/O yet: the handshake is the connection goroutine's.
			c.tc = tls.Server(nc, s.tls)
			c.nc = c.tc
		}
		if !s.track(c, true) {
			nc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.shutting.Load() {
			return false
		}
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
	return true
}

// Shutdown stops accepting, closes idle connections and waits for busy
// ones (the front's and net/http's) until they finish or ctx ends, then
// closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.mu.Lock()
	ln, started := s.ln, s.ln != nil
	s.mu.Unlock()
	if !started {
		return nil
	}
	ln.Close()
	// The front's connections first: one in flight may still hand its
	// request to net/http, which must be serving to answer it.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
	for s.closeIdle() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
			s.closeAll()
		case <-tick.C:
		}
	}
	for _, hl := range s.httpServers() {
		if herr := hl.srv.Shutdown(ctx); err == nil {
			err = herr
		}
	}
	if err != nil {
		for _, hl := range s.httpServers() {
			_ = hl.srv.Close() // out of time: what net/http still holds goes too
		}
	}
	s.cancel()
	<-s.httpDone
	return err
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.shutting.Store(true)
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return nil
	}
	ln.Close()
	var err error
	for _, hl := range s.httpServers() {
		if herr := hl.srv.Close(); err == nil {
			err = herr
		}
	}
	s.closeAll()
	s.cancel()
	<-s.httpDone
	return err
}

// closeIdle closes the connections waiting for a request and returns how
// many connections remain.
func (s *Server) closeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			c.nc.Close()
		}
	}
	return len(s.conns)
}

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.state.Store(stateClosed)
		// The socket itself: a TLS close_notify could wait on a write.
		c.raw.Close()
	}
}

const (
	stateIdle int32 = iota
	stateActive
	stateClosed
)

// conn is one accepted connection while the front serves it.
type conn struct {
	srv   *Server
	nc    net.Conn  // what requests are read from: the *tls.Conn under TLS
	raw   net.Conn  // the accepted socket
	tc    *tls.Conn // under TLS
	state atomic.Int32

	br       *bufio.Reader
	req      Request
	resp     Response
	out      []byte
	scratch  []byte
	deadline time.Time // the connection's read and write deadline
	dateSec  int64
	date     []byte // "Date: ...\r\n" for dateSec
}

func (c *conn) serve() {
	s := c.srv
	handedOff := false
	defer func() {
		if p := recover(); p != nil {
			s.Logger.Error("panic serving HTTP/1.1 request", "remote", c.nc.RemoteAddr().String(), "panic", fmt.Sprint(p))
		}
		if !handedOff {
			c.nc.Close()
		}
		s.track(c, false)
	}()
	if c.tc != nil {
		if !c.handshake() {
			return
		}
		if c.tc.ConnectionState().NegotiatedProtocol == "h2" {
			if !c.state.CompareAndSwap(stateIdle, stateActive) {
				return // Shutdown closed it while idle
			}
			handedOff = c.handOffH2()
			return
		}
	}
	c.br = bufio.NewReaderSize(c.nc, BufferSize)
	c.req.Context = s.ctx
	// A new connection must send its first request head within
	// ReadHeaderTimeout, as net/http asks; later the idle timeout applies.
	now := time.Now()
	c.deadline = now.Add(s.headerTimeout())
	_ = c.nc.SetDeadline(c.deadline)
	lastPOST := false
	for first := true; ; first = false {
		if first {
			if _, err := c.br.Peek(1); err != nil {
				return // closed, timed out or hung up before sending anything
			}
		} else {
			// As net/http: wait, within the idle timeout, for the first 4
			// bytes of the next request (fewer and a hang-up or timeout
			// close the connection unanswered), and after a POST skip the
			// CR and LF among them that old clients send after a body.
			peek, err := c.br.Peek(4)
			if err != nil {
				return
			}
			if lastPOST {
				_, _ = c.br.Discard(leadingCRorLF(peek))
			}
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return // Shutdown closed it while idle
		}
		if !first {
			c.tick(time.Now())
		}
		r, err := c.readRequest(first)
		if r == incomplete && c.state.Load() == stateClosed {
			return // Shutdown ran out of time
		}
		if r == served {
			c.resp.reset(c.scratch)
			if !s.Fast.ServeH1(&c.req, &c.resp) {
				r = declined
			}
		}
		if r != served {
			// net/http gets the bytes, and the error that ended an
			// incomplete request, and answers (or drops) them as it
			// would have on its own.
			handedOff = c.handOff(r, first, err)
			return
		}
		s.served.Add(1)
		lastPOST = string(c.req.Method) == "POST"
		closing := c.req.Close || s.shutting.Load()
		_, _ = c.br.Discard(c.req.size)
		c.tick(time.Now()) // a slow route still gets to answer; Date is current
		c.writeResponse(closing)
		if cap(c.resp.Buf) > cap(c.scratch) && cap(c.resp.Buf) <= keepBytes {
			c.scratch = c.resp.Buf[:0] // keep a grown scratch buffer, within reason
		}
		if _, err := c.nc.Write(c.out); err != nil || closing {
			return
		}
		if cap(c.out) > keepBytes {
			c.out = nil // an idle connection does not hold a large answer's buffer
		}
		if !c.state.CompareAndSwap(stateActive, stateIdle) {
			return
		}
	}
}

// leadingCRorLF counts the CR and LF bytes at the start of b.
func leadingCRorLF(b []byte) int {
	n := 0
	for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
		n++
	}
	return n
}

// keepBytes bounds the buffers an idle connection keeps between requests.
const keepBytes = 8 << 10

// headerTimeout is how long a request head may take, timed for the first
// request from the connection's start and for later ones from their first
// bytes: net/http's ReadHeaderTimeout, or its ReadTimeout when that is
// zero; the front's IdleTimeout bounds it when both are zero.
func (s *Server) headerTimeout() time.Duration {
	if t := s.HTTP.ReadHeaderTimeout; t > 0 {
		return t
	}
	if t := s.HTTP.ReadTimeout; t > 0 {
		return t
	}
	return s.IdleTimeout
}

// readRequest parses the next request, reading more while it is
// incomplete and could still fit the buffer: Go's http.Transport, and so
// connect-go, writes the head and the body of a request separately. A
// later request that is not all there at once gets headerTimeout from now
// (a first one has had it since the connection started), as net/http
// times a head from its first bytes. Once the head is whole the body has
// BodyTimeout (see Admit for what is asked first). A request that stays
// incomplete returns with the read error that ended it.
func (c *conn) readRequest(first bool) (reason, error) {
	timed, bodyTimed := first, false
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		r := parse(buf, BufferSize, &c.req)
		if r != incomplete {
			return r, nil
		}
		if len(buf) >= BufferSize {
			return tooLarge, nil
		}
		if !timed {
			timed = true
			c.deadline = time.Now().Add(c.srv.headerTimeout())
			_ = c.nc.SetDeadline(c.deadline)
		}
		if c.req.head > 0 && !bodyTimed {
			// The head is whole and the body is not: the caller is
			// judged on the head before the front waits for any of it,
			// and the body gets its own deadline.
			bodyTimed = true
			if a := c.srv.Admit; a != nil && !a(&c.req) {
				return refused, nil
			}
			if d := c.srv.BodyTimeout; d > 0 {
				c.deadline = time.Now().Add(d)
				_ = c.nc.SetDeadline(c.deadline)
			}
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			return incomplete, err
		}
	}
}

// tick keeps the connection's deadline at least IdleTimeout-1s ahead of
// now (IdleTimeout/2 for short timeouts), moving it to now+IdleTimeout when
// it falls behind: so it is set at most about once a second (per request it would cost a timer update on
// every call), and a request that arrives late in an idle spell, or a slow
// route, still gets a full timeout. It also keeps the Date header current.
func (c *conn) tick(now time.Time) {
	idle := c.srv.IdleTimeout
	if left := c.deadline.Sub(now); left < idle-min(time.Second, idle/2) || left > idle {
		c.deadline = now.Add(idle)
		_ = c.nc.SetDeadline(c.deadline)
	}
	if sec := now.Unix(); sec != c.dateSec {
		c.dateSec = sec
		c.date = append(append(append(c.date[:0], "Date: "...), now.UTC().Format(http.TimeFormat)...), "\r\n"...)
	}
}

// handOff gives the connection, with what was read so far, to net/http:
// to HTTP at its first request, to the mid-stream server after (see
// continuing). readErr, the error that ended an incomplete request, is
// what net/http reads once the replayed bytes are spent, so it meets the
// same end. When net/http has already shut down, the request it would have
// served is answered 503 instead of dropped.
func (c *conn) handOff(r reason, first bool, readErr error) bool {
	c.srv.handoffs[r].Add(1)
	// net/http manages its own deadlines; it must not inherit ours.
	_ = c.nc.SetDeadline(time.Time{})
	var hc net.Conn = &handoffConn{Conn: c.nc, br: c.br, err: readErr}
	if c.tc != nil {
		hc = &tlsHandoffConn{hc.(*handoffConn), c.tc}
	}
	ln := c.srv.contOff
	if first {
		ln = c.srv.handoff
	}
	if ln.push(hc) {
		return true
	}
	_ = c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c.nc, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: 14\r\nConnection: close\r\n\r\nshutting down\n")
	return false
}

// frontOwned reports the framing headers only the front writes.
func frontOwned(name string) bool {
	switch {
	case len(name) > 20:
		return false
	case equalFold(name, "Content-Length"), equalFold(name, "Date"),
		equalFold(name, "Connection"), equalFold(name, "Transfer-Encoding"):
		return true
	}
	return false
}

func (c *conn) writeResponse(closing bool) {
	resp := &c.resp
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	b := append(c.out[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)
	for _, h := range resp.headers() {
		if frontOwned(h.name) {
			continue
		}
		b = append(append(append(b, h.name...), ": "...), h.value...)
		// net/http's rule for values: no line breaks inside a header.
		for i := len(b) - len(h.value); i < len(b); i++ {
			if b[i] == '\r' || b[i] == '\n' {
				b[i] = ' '
			}
		}
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(resp.Body)), 10)
	b = append(b, "\r\n"...)
	b = append(b, c.date...)
	if closing {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	c.out = append(b, resp.Body...)
}
