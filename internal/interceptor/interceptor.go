// Package interceptor builds connect-go handler interceptors from one
// function that runs around every call, so a server-side concern (the
// token check, per-RPC metrics) is written once instead of once for unary
// and once for streaming calls.
//
// Guarantees:
//   - Around's function sees every unary and streaming call a handler
//     serves, with its spec, peer and request header, before the call.
//   - The call runs only when the function calls next, at most once: a
//     function that returns without calling it refuses the call with its
//     error (a unary caller gets that error and no response).
//   - Calls a client makes pass untouched: the interceptor is for
//     handlers (connect.WithInterceptors on a handler), and is harmless
//     if it also ends up in a client's options.
package interceptor

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
)

// Call is what a handler-side interceptor knows about a call before it
// runs.
type Call struct {
	Spec   connect.Spec
	Peer   connect.Peer
	Header http.Header // the request's
}

// Func runs around one call: next runs it and answers its error.
type Func func(ctx context.Context, call Call, next func(context.Context) error) error

// Around is f as a connect.Interceptor for handlers.
func Around(f Func) connect.Interceptor { return around(f) }

type around Func

func (f around) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		var res connect.AnyResponse
		err := f(ctx, Call{req.Spec(), req.Peer(), req.Header()}, func(ctx context.Context) error {
			var err error
			res, err = next(ctx, req)
			return err
		})
		return res, err
	}
}

func (f around) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (f around) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return f(ctx, Call{conn.Spec(), conn.Peer(), conn.RequestHeader()}, func(ctx context.Context) error {
			return next(ctx, conn)
		})
	}
}
