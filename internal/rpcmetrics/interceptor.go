package rpcmetrics

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/interceptor"
)

// Interceptor records every unary and streaming call a handler serves.
// Install it first (outermost) so refusals by later interceptors, such as
// the auth check, are counted with their code.
func (m *Metrics) Interceptor() connect.Interceptor {
	return interceptor.Around(func(ctx context.Context, c interceptor.Call, next func(context.Context) error) error {
		start := time.Now()
		err := next(ctx)
		m.Observe(c.Spec.Procedure, c.Peer.Protocol, CodeName(err), time.Since(start))
		return err
	})
}

// CodeName is the Connect code of err as the wire spells it ("ok" for
// nil, "unknown" for an error without a code).
func CodeName(err error) string {
	if err == nil {
		return "ok"
	}
	return connect.CodeOf(err).String()
}
