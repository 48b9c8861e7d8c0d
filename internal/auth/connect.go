package auth

import (
	"context"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Interceptor checks every unary and streaming call a handler receives;
// connect-go writes a refusal in the caller's protocol (Connect, gRPC,
// gRPC-web). A nil Authorizer allows everything.
func (a *Authorizer) Interceptor() connect.Interceptor { return interceptor{a} }

type interceptor struct{ a *Authorizer }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		if _, err := i.a.Check(req.Header().Get("Authorization"), req.Spec().Procedure); err != nil {
			return nil, errs.Connect(err)
		}
		return next(ctx, req)
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if _, err := i.a.Check(conn.RequestHeader().Get("Authorization"), conn.Spec().Procedure); err != nil {
			return errs.Connect(err)
		}
		return next(ctx, conn)
	}
}
