package rpcmetrics

import (
	"context"
	"time"

	"connectrpc.com/connect"
)

// Interceptor records every unary and streaming call a handler serves.
// Install it first (outermost) so refusals by later interceptors, such as
// the auth check, are counted with their code.
func (m *Metrics) Interceptor() connect.Interceptor { return interceptor{m} }

type interceptor struct{ m *Metrics }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		res, err := next(ctx, req)
		i.m.Observe(req.Spec().Procedure, req.Peer().Protocol, CodeName(err), time.Since(start))
		return res, err
	}
}

// WrapStreamingClient leaves clients alone: these are server metrics.
func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		err := next(ctx, conn)
		i.m.Observe(conn.Spec().Procedure, conn.Peer().Protocol, CodeName(err), time.Since(start))
		return err
	}
}

// CodeName is the Connect code of err as the wire spells it ("ok" for
// nil, "unknown" for an error without a code).
func CodeName(err error) string {
	if err == nil {
		return "ok"
	}
	return connect.CodeOf(err).String()
}
