// Package connectfast serves hot Connect RPCs on the HTTP/1.1 front
// (package h1): unary with the binary proto codec, without connect-go's
// generic machinery (codec and compression negotiation, header building,
// interceptor chain), which under load was about a fifth of a server's CPU
// (pprof). It holds the Connect framing only; each RPC brings its own
// decode, work and encode. Package h1 knows HTTP/1.1 and nothing of
// Connect; this package is the one place that knows which Connect requests
// the front may answer and how connect-go would answer them.
//
// Guarantees:
//   - Only a request connect-go would answer exactly the same way is
//     served (see eligible); every other request is declined and goes to
//     net/http, and so to the connect-go handler, unchanged.
//   - Answers are what connect-go sends: the proto body with
//     Content-Type application/proto, or connect-go's own JSON error
//     (written by connect.ErrorWriter), and connect-go's Accept-Encoding,
//     so clients cannot tell the two apart (routestest.Check compares
//     them).
//   - A body that does not decode is invalid_argument. Errors, panics and
//     deadlines are mapped by package errs (Connect, Recovered), as the
//     connect-go handlers map them, so both answer alike.
//   - The answer's Connect code is in h1.Response.Code, for metrics.
//   - An RPC that returns ErrFallThrough before acting has its request
//     declined, and net/http serves it with the body as it arrived.
//   - One known difference: a request whose deadline is already over
//     (Connect-Timeout-Ms: 0) is answered deadline_exceeded before its
//     body is decoded; connect-go decodes first, so if that body is also
//     malformed connect-go answers invalid_argument. Both refuse it.
package connectfast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// Func serves one eligible request. body is the whole request body; it is
// valid only during the call, and once Func no longer needs it Func may
// append its answer to body[:0] so the connection's buffer is reused. It
// returns the encoded response message, or an error, mapped by
// errs.Connect as a connect-go handler maps it and written as connect-go
// would write it, or ErrFallThrough.
type Func func(ctx context.Context, body []byte) ([]byte, error)

// ErrFallThrough is returned by a Func that has done nothing and wants
// connect-go to serve the request instead (a follower forwarding, say).
var ErrFallThrough = errors.New("connectfast: fall through to connect-go")

// H1 serves one procedure for the HTTP/1.1 front; the front routes by
// path (h1.Mux), so the procedure is the route's, not checked here. A
// request that is not eligible, or whose RPC returns ErrFallThrough, is
// declined and goes to net/http unchanged. A nil logger means
// slog.Default().
func H1(maxBodyBytes int64, logger *slog.Logger, serve Func) h1.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	errw := connect.NewErrorWriter()
	return h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		d, hasDeadline, ok := eligible(req.Method, len(req.Body), req, maxBodyBytes)
		if !ok {
			return false
		}
		ctx := req.Context
		if hasDeadline {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		// The request body lives in the connection's read buffer; the RPC
		// gets a copy in the connection's scratch, where it may append its
		// answer.
		body := append(resp.Buf[:0], req.Body...)
		out, err := call(ctx, logger, string(req.Path), serve, body)
		if errors.Is(err, ErrFallThrough) {
			return false
		}
		// connect-go names the compressions it accepts on every answer.
		resp.SetHeader("Accept-Encoding", "gzip")
		if err != nil {
			_ = errw.Write(resp.Writer(), errorRequest, err)
			resp.Code = connect.CodeOf(err).String()
			return true
		}
		resp.Buf, resp.Body, resp.Code = out, out, "ok"
		resp.SetHeader("Content-Type", "application/proto")
		return true
	})
}

// Decode unmarshals body into m, answering a malformed body with the
// invalid_argument error connect-go gives, word for word (its proto codec
// names the message type, its protocol handler adds the prefix).
func Decode(body []byte, m proto.Message) error {
	if err := proto.Unmarshal(body, m); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("unmarshal message: unmarshal into %T: %w", m, err))
	}
	return nil
}

// headers is what eligible reads of a request: h1.Request's Header.
type headers interface {
	Header(name string) (value []byte, n int)
}

// eligible reports whether connect-go would answer the request exactly as
// H1 does: POST, Content-Type application/proto, no Content-Encoding,
// protocol version absent or 1, a body within maxBodyBytes, and a
// Connect-Timeout-Ms that is absent or well-formed (H1 applies it as
// connect-go does; connect-go's own clients send it on every call with a
// deadline, so refusing it would keep the front from real callers). It
// returns that timeout and whether there is one.
func eligible(method []byte, bodyLen int, h headers, maxBodyBytes int64) (timeout time.Duration, hasTimeout, ok bool) {
	if string(method) != http.MethodPost || int64(bodyLen) > maxBodyBytes {
		return 0, false, false
	}
	if v, n := h.Header("Content-Type"); n != 1 || string(v) != "application/proto" {
		return 0, false, false
	}
	if v, n := h.Header("Connect-Protocol-Version"); n > 1 || n == 1 && string(v) != "1" {
		return 0, false, false
	}
	if _, n := h.Header("Content-Encoding"); n != 0 {
		return 0, false, false
	}
	v, n := h.Header("Connect-Timeout-Ms")
	if n == 0 {
		return 0, false, true
	}
	d, ok := parseTimeout(v, n)
	// A malformed timeout is connect-go's to answer, with its own error.
	return d, ok, ok
}

// parseTimeout reads the first of n Connect-Timeout-Ms values, in place,
// by the Connect protocol's rule: one value of 1 to 10 ASCII digits.
func parseTimeout(v []byte, n int) (time.Duration, bool) {
	if n != 1 || len(v) == 0 || len(v) > 10 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return time.Duration(ms) * time.Millisecond, true
}

// errorRequest is what connect.ErrorWriter needs to know of an eligible
// request: a Connect unary call, answered with a JSON error.
var errorRequest = &http.Request{
	Method: http.MethodPost,
	Header: http.Header{"Content-Type": {"application/proto"}, "Connect-Protocol-Version": {"1"}},
}

// call runs serve with the errors a connect-go handler of this project
// gives: a panic is errs.Recovered, a deadline already over is answered
// without calling serve (as connect-go does, Connect-Timeout-Ms: 0 say),
// and an error goes through errs.Connect (a context error gets its code
// there), the mapping every handler applies.
func call(ctx context.Context, logger *slog.Logger, procedure string, serve Func, body []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, errs.Recovered(ctx, logger, procedure, p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, errs.Connect(err)
	}
	out, err = serve(ctx, body)
	if err != nil && !errors.Is(err, ErrFallThrough) {
		return nil, errs.Connect(err)
	}
	return out, err
}
