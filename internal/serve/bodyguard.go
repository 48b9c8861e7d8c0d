package serve

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
)

// bodyGuard bounds the reading of every request body net/http serves,
// HTTP/1.1 and HTTP/2 alike: the whole body within timeout from the
// moment its head was read; a body of unknown length (chunked) at least
// minRate bytes a second on average after a second of grace; and the
// body bytes read and not yet answered, all requests together, within
// inFlight (each body's first freeBodyBytes aside). net/http alone bounds only the head (ReadHeaderTimeout), and
// connect-go reads a whole unary body before any interceptor runs, so
// without this a client could hold a connection and a body's memory as
// long as it liked. The deadline is the connection's (HTTP/1.1) or the
// stream's (HTTP/2) read deadline, so it also ends net/http's own read
// of a body a handler left unread. It is lifted once the body has been
// read to its end, so a slow handler is not cut off.
type bodyGuard struct {
	timeout  time.Duration
	minRate  int64 // bytes per second; 0: none
	inFlight int64
	used     atomic.Int64
}

// The answers of a body the guard cut off. connect-go passes a
// *connect.Error from the body through to the caller as it is.
var (
	errBodyTimeout  = connect.NewError(connect.CodeDeadlineExceeded, errors.New("request body not received in time (--body-timeout, --body-min-rate)"))
	errBodiesInFull = connect.NewError(connect.CodeResourceExhausted, errors.New("the server is reading too many request bodies at once (--max-body-bytes-in-flight); retry"))
)

// freeBodyBytes of every body are not counted against the in-flight
// budget: the calls of a well-behaved client (a few hundred bytes) go
// through while large bodies fill it. What they can hold is bounded by
// the connection bounds instead.
const freeBodyBytes = 16 << 10

// minRateGrace is how long a body of unknown length has before its rate
// counts.
const minRateGrace = time.Second

// wrap guards r's body; the returned function gives its bytes back to
// the in-flight budget and must run when the handler returns.
func (g *bodyGuard) wrap(w http.ResponseWriter, r *http.Request) func() {
	// ContentLength 0: no body (an HTTP/2 request has a Body even then).
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || g == nil {
		return func() {}
	}
	now := time.Now()
	b := &guardedBody{g: g, rc: http.NewResponseController(w), rc0: r.Body, start: now,
		end: now.Add(g.timeout), rated: r.ContentLength < 0 && g.minRate > 0}
	b.deadline = b.end
	if b.rated {
		b.deadline = earlier(b.end, now.Add(minRateGrace))
	}
	_ = b.rc.SetReadDeadline(b.deadline)
	r.Body = b
	return func() {
		b.release()
		// net/http looks at the body's own type after the handler to
		// decide whether the connection may serve another request.
		r.Body = b.rc0
	}
}

type guardedBody struct {
	g        *bodyGuard
	rc       *http.ResponseController
	rc0      io.ReadCloser
	start    time.Time
	end      time.Time // the whole body's deadline
	deadline time.Time // the read deadline in force
	rated    bool
	total    int64 // bytes read
	read     int64 // of those, the bytes counted in g.used
	done     bool
	closed   bool
	err      error // the guard's own answer, once given
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.rc0.Read(p)
	if n > 0 {
		// Only what passes freeBodyBytes counts: a small call is never
		// refused because large bodies fill the budget.
		paid := max(0, b.total+int64(n)-freeBodyBytes) - max(0, b.total-freeBodyBytes)
		if paid > 0 && b.g.used.Add(paid) > b.g.inFlight {
			b.g.used.Add(-paid)
			return 0, b.fail(errBodiesInFull)
		}
		b.total += int64(n)
		b.read += paid
	}
	switch {
	case err == io.EOF:
		if !b.done {
			b.done = true
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return n, b.fail(errBodyTimeout)
	case err == nil && b.rated:
		// The rate so far buys the time to the next byte: a body at
		// minRate always has its deadline ahead of it.
		next := earlier(b.end, b.start.Add(minRateGrace+time.Duration(float64(b.read)/float64(b.g.minRate)*float64(time.Second))))
		if next.Sub(b.deadline) > 50*time.Millisecond {
			b.deadline = next
			_ = b.rc.SetReadDeadline(next)
		}
	}
	return n, err
}

// fail ends the body with err, the guard's answer. Nothing more is read:
// the connection's read deadline passes now, so net/http does not wait
// for the rest of the body after the handler either and closes an
// HTTP/1.1 connection (Connection: close) instead of reusing it.
func (b *guardedBody) fail(err error) error {
	b.err = err
	_ = b.rc.SetReadDeadline(time.Now())
	return err
}

// Close does not close net/http's body: net/http then still sees a body
// not read to its end and closes the connection (the handler's Close
// would let it reuse the connection with the body's rest unread).
// net/http closes its body itself after the handler.
func (b *guardedBody) Close() error {
	b.closed = true
	return nil
}

func (b *guardedBody) release() {
	b.g.used.Add(-b.read)
	b.read = 0
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
