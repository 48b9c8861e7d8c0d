package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"connectrpc.com/connect"
)

// Bearer is a client interceptor that sends "Authorization: Bearer
// token" on every call.
func Bearer(token string) connect.Interceptor { return bearerInterceptor("Bearer " + token) }

type bearerInterceptor string

func (b bearerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			req.Header().Set("Authorization", string(b))
		}
		return next(ctx, req)
	}
}

func (b bearerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", string(b))
		return conn
	}
}

func (b bearerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// ReadTokenFile reads a token file: the token, surrounding white space
// (a final newline) removed.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("token file " + path + " is empty")
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", errors.New("token file " + path + " holds more than one word")
	}
	return tok, nil
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
