package auth

import (
	"context"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/interceptor"
)

// Interceptor checks every unary and streaming call a handler receives;
// connect-go writes a refusal in the caller's protocol (Connect, gRPC,
// gRPC-web). A nil Authorizer allows everything.
func (a *Authorizer) Interceptor() connect.Interceptor {
	return interceptor.Around(func(ctx context.Context, c interceptor.Call, next func(context.Context) error) error {
		if _, err := a.Check(c.Header.Get("Authorization"), c.Spec.Procedure); err != nil {
			return errs.Connect(err)
		}
		return next(ctx)
	})
}
