package auth

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
)

// Bearer is a client interceptor that sends "Authorization: Bearer
// token" on every call.
func Bearer(token string) connect.Interceptor {
	h := "Bearer " + token
	return bearerInterceptor(func() string { return h })
}

// BearerFrom is Bearer with the token asked for on every call: a
// TokenFile's Token follows a rotated file.
func BearerFrom(token func() string) connect.Interceptor {
	return bearerInterceptor(func() string { return "Bearer " + token() })
}

// bearerInterceptor sets the Authorization value it returns.
type bearerInterceptor func() string

func (b bearerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			req.Header().Set("Authorization", b())
		}
		return next(ctx, req)
	}
}

func (b bearerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", b())
		return conn
	}
}

func (b bearerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// BearerTransport sends every request through next with Authorization:
// Bearer TOKEN: for plain HTTP clients (Leaf GETs, /metrics, raw calls)
// where no connect-go interceptor runs.
func BearerTransport(token string, next http.RoundTripper) http.RoundTripper {
	return bearerTransport{header: "Bearer " + token, next: next}
}

type bearerTransport struct {
	header string
	next   http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", b.header)
	return b.next.RoundTrip(r)
}
