// Package connectfast serves one hot Connect RPC, unary with the binary
// proto codec, without connect-go's generic machinery (codec and
// compression negotiation, header building, interceptor chain), which
// under load was about a fifth of a server's CPU (pprof). It holds the
// framing only; each RPC brings its own decode, work and encode.
//
// Guarantees:
//   - Only a request connect-go would answer exactly the same way takes the
//     fast path (see Eligible); every other request, and every other
//     procedure, goes to the connect-go handler unchanged.
//   - Answers are the bytes connect-go sends: the proto body with
//     Content-Type application/proto, or connect-go's own JSON error
//     (written by connect.ErrorWriter), so clients cannot tell the two
//     apart.
//   - A body shorter than its Content-Length or that does not decode is
//     invalid_argument; a panic in the RPC is logged and answered internal.
//   - An RPC that returns ErrFallThrough before acting has its request
//     handed to the connect-go handler with the body as it arrived.
//   - One known difference: a request whose deadline is already over
//     (Connect-Timeout-Ms: 0) is answered deadline_exceeded before its
//     body is decoded; connect-go decodes first, so if that body is also
//     malformed connect-go answers invalid_argument. Both refuse it.
package connectfast

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
)

// Func serves one eligible request. body is the whole request body; it is
// valid only during the call, and once Func no longer needs it Func may
// append its answer to body[:0] so the pooled buffer is reused. It returns
// the encoded response message, or an error that is written as connect-go
// would write it (a *connect.Error keeps its code), or ErrFallThrough.
type Func func(ctx context.Context, body []byte) ([]byte, error)

// ErrFallThrough is returned by a Func that has done nothing and wants
// connect-go to serve the request instead (a follower forwarding, say).
var ErrFallThrough = errors.New("connectfast: fall through to connect-go")

// Handler serves procedure with serve when the request is Eligible and
// hands everything else to next, the connect-go handler of the same
// service. A nil logger means slog.Default().
func Handler(procedure string, next http.Handler, maxBodyBytes int64, logger *slog.Logger, serve Func) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	errw := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != procedure || !Eligible(r, maxBodyBytes) {
			next.ServeHTTP(w, r)
			return
		}
		bp := bufs.Get().(*[]byte)
		defer bufs.Put(bp)
		body, err := readBody(r, bp)
		if err != nil {
			_ = errw.Write(w, r, err)
			return
		}
		ctx := r.Context()
		if d, ok := timeout(r.Header); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		out, err := call(ctx, logger, r.URL.Path, serve, body)
		if errors.Is(err, ErrFallThrough) {
			// next runs to completion before the deferred Put returns the
			// buffer to the pool, so it can read body in place.
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			_ = errw.Write(w, r, err)
			return
		}
		*bp = out
		h := w.Header()
		h["Content-Type"] = protoContentType
		h["Content-Length"] = []string{strconv.Itoa(len(out))}
		_, _ = w.Write(out)
	})
}

// Decode unmarshals body into m, answering a malformed body with the
// invalid_argument error connect-go gives.
func Decode(body []byte, m proto.Message) error {
	if err := proto.Unmarshal(body, m); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unmarshal message: %w", err))
	}
	return nil
}

// Eligible reports whether connect-go would answer r exactly as Handler
// does: POST, Content-Type application/proto, no Content-Encoding, a
// Connect-Timeout-Ms that is absent or well-formed (Handler applies it as
// connect-go does; connect-go's own clients send it on every call with a
// deadline, so refusing it would keep the fast path from real callers),
// protocol version absent or 1, and a known Content-Length within
// maxBodyBytes.
func Eligible(r *http.Request, maxBodyBytes int64) bool {
	h := r.Header
	if r.Method != http.MethodPost || r.ContentLength < 0 || r.ContentLength > maxBodyBytes {
		return false
	}
	if ct := h["Content-Type"]; len(ct) != 1 || ct[0] != "application/proto" {
		return false
	}
	if v := h["Connect-Protocol-Version"]; len(v) > 1 || len(v) == 1 && v[0] != "1" {
		return false
	}
	if v := h["Connect-Timeout-Ms"]; len(v) > 0 {
		if _, ok := timeout(h); !ok {
			return false // malformed: connect-go answers it with its own error
		}
	}
	return len(h["Content-Encoding"]) == 0
}

// timeout parses Connect-Timeout-Ms by the Connect protocol's rule: one
// value of 1 to 10 ASCII digits.
func timeout(h http.Header) (time.Duration, bool) {
	v := h["Connect-Timeout-Ms"]
	if len(v) == 0 {
		return 0, false
	}
	return parseTimeout(v[0], len(v))
}

// parseTimeout is timeout for the first of n values v: a string from
// net/http's header map or bytes from the HTTP/1.1 front's buffer, read in
// place either way.
func parseTimeout[T string | []byte](v T, n int) (time.Duration, bool) {
	if n != 1 || len(v) == 0 || len(v) > 10 {
		return 0, false
	}
	var ms int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return time.Duration(ms) * time.Millisecond, true
}

// contextCode gives a deadline or cancellation the code connect-go gives
// it, for an RPC that returned the bare context error.
func contextCode(err error) error {
	var ce *connect.Error
	switch {
	case errors.As(err, &ce), errors.Is(err, ErrFallThrough):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	}
	return err
}

// readBody reads exactly r.ContentLength bytes into the pooled buffer *bp,
// growing it when too small. Eligible has bounded the length already.
func readBody(r *http.Request, bp *[]byte) ([]byte, error) {
	n := int(r.ContentLength)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	buf := (*bp)[:n]
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("read message: %w", err))
	}
	return buf, nil
}

var (
	protoContentType = []string{"application/proto"}
	bufs             = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
)
