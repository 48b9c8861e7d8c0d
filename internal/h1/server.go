package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	Logger      *slog.Logger

	mu       sync.Mutex
	ln       net.Listener
	handoff  *chanListener
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
func (s *Server) Serve(ln net.Listener) error {
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
	s.ln = ln
	s.handoff = newChanListener(ln.Addr())
	s.conns = map[*conn]struct{}{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.httpDone = make(chan struct{})
	go func() {
		defer close(s.httpDone)
		_ = s.HTTP.Serve(s.handoff) // ErrServerClosed once Shutdown or Close ran
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
				return err
			}
			// EMFILE and the like: back off as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.Logger.Warn("accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := &conn{srv: s, nc: nc}
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
	httpErr := make(chan error, 1)
	go func() { httpErr <- s.HTTP.Shutdown(ctx) }()

	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
	for {
		if s.closeIdle() == 0 {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
			s.closeAll()
		case <-tick.C:
			continue
		}
		break
	}
	if herr := <-httpErr; err == nil {
		err = herr
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
	err := s.HTTP.Close()
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
		c.nc.Close()
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
	nc    net.Conn
	state atomic.Int32

	br       *bufio.Reader
	req      Request
	resp     Response
	out      []byte
	scratch  []byte
	deadline time.Time // when the idle deadline was last pushed out
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
	c.br = bufio.NewReaderSize(c.nc, BufferSize)
	c.req.Context = s.ctx
	c.tick(time.Now())
	for {
		if _, err := c.br.Peek(1); err != nil {
			return // closed, idle timeout or a hang-up
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return // Shutdown closed it while idle
		}
		// After an idle spell the request gets a fresh deadline for its
		// answer, and the Date is current.
		c.tick(time.Now())
		r := c.readRequest()
		if r == incomplete {
			return // the client went quiet or away mid-request
		}
		if r == served {
			c.resp.reset(c.scratch)
			if !s.Fast.ServeH1(&c.req, &c.resp) {
				r = declined
			}
		}
		if r != served {
			handedOff = c.handOff(r)
			return
		}
		s.served.Add(1)
		closing := c.req.Close || s.shutting.Load()
		_, _ = c.br.Discard(c.req.size)
		c.writeResponse(closing)
		if cap(c.resp.Buf) > cap(c.scratch) && cap(c.resp.Buf) <= 64<<10 {
			c.scratch = c.resp.Buf[:0] // keep a grown scratch buffer, within reason
		}
		if _, err := c.nc.Write(c.out); err != nil || closing {
			return
		}
		if !c.state.CompareAndSwap(stateActive, stateIdle) {
			return
		}
	}
}

// readRequest parses the next request, reading more while it is
// incomplete and could still fit the buffer: Go's http.Transport, and so
// connect-go, writes the head and the body of a request separately. A
// client that stops halfway waits out the connection deadline, as an idle
// one does, and is then dropped (incomplete).
func (c *conn) readRequest() reason {
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		r := parse(buf, BufferSize, &c.req)
		if r != incomplete {
			return r
		}
		if len(buf) >= BufferSize {
			return tooLarge
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			return incomplete
		}
	}
}

// tick pushes the connection's deadline IdleTimeout ahead, at most once a
// second (per request it would cost a timer update on every call), and
// keeps the Date header current.
func (c *conn) tick(now time.Time) {
	if now.Sub(c.deadline) >= time.Second {
		c.deadline = now
		_ = c.nc.SetDeadline(now.Add(c.srv.IdleTimeout))
	}
	if sec := now.Unix(); sec != c.dateSec {
		c.dateSec = sec
		c.date = append(append(append(c.date[:0], "Date: "...), now.UTC().Format(http.TimeFormat)...), "\r\n"...)
	}
}

// handOff gives the connection, with what was read so far, to net/http.
func (c *conn) handOff(r reason) bool {
	c.srv.handoffs[r].Add(1)
	// net/http manages its own deadlines; it must not inherit ours.
	_ = c.nc.SetDeadline(time.Time{})
	hc := &handoffConn{Conn: c.nc, br: c.br}
	if !c.srv.handoff.push(hc) {
		return false // shutting down: the deferred close ends it
	}
	return true
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
		b = append(append(append(append(b, h.name...), ": "...), h.value...), "\r\n"...)
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
