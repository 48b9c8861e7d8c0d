package connectfast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/h1"
)

// H1 serves one procedure for the HTTP/1.1 front (package h1), with the
// same eligibility, answers and errors as Handler; the front routes by
// path, so the procedure is the route's, not checked here. A request that
// is not eligible, or whose RPC returns ErrFallThrough, is declined and
// goes to net/http (and so to Handler or connect-go) unchanged.
func H1(maxBodyBytes int64, logger *slog.Logger, serve Func) h1.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	errw := connect.NewErrorWriter()
	return h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		if string(req.Method) != http.MethodPost || int64(len(req.Body)) > maxBodyBytes {
			return false
		}
		if v, n := req.Header("Content-Type"); n != 1 || string(v) != "application/proto" {
			return false
		}
		if v, n := req.Header("Connect-Protocol-Version"); n > 1 || n == 1 && string(v) != "1" {
			return false
		}
		if _, n := req.Header("Content-Encoding"); n != 0 {
			return false
		}
		ctx := req.Context
		if v, n := req.Header("Connect-Timeout-Ms"); n > 0 {
			d, ok := parseTimeout(v, n)
			if !ok {
				return false // malformed: connect-go answers it with its own error
			}
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
		if err != nil {
			_ = errw.Write(resp.Writer(), errorRequest, err)
			return true
		}
		resp.Buf, resp.Body = out, out
		resp.SetHeader("Content-Type", "application/proto")
		return true
	})
}

// errorRequest is what connect.ErrorWriter needs to know of an eligible
// request: a Connect unary call, answered with a JSON error.
var errorRequest = &http.Request{
	Method: http.MethodPost,
	Header: http.Header{"Content-Type": {"application/proto"}, "Connect-Protocol-Version": {"1"}},
}

// call runs serve, turning a panic into connect-go's internal error and a
// bare context error into connect-go's code for it.
func call(ctx context.Context, logger *slog.Logger, procedure string, serve Func, body []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			logger.ErrorContext(ctx, "panic in handler", "procedure", procedure, "panic", fmt.Sprint(p))
			out, err = nil, connect.NewError(connect.CodeInternal, errors.New("internal error"))
		}
	}()
	// connect-go answers a deadline that is already over without calling
	// the RPC (Connect-Timeout-Ms: 0, say); so does the fast path.
	if err := ctx.Err(); err != nil {
		return nil, contextCode(err)
	}
	out, err = serve(ctx, body)
	if err != nil {
		return nil, contextCode(err)
	}
	return out, nil
}
