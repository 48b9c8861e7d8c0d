package interceptor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
)

// TestAround goes through real connect-go handlers and clients: f sees
// unary and server-streaming calls with their procedure, protocol and
// header, a call runs only through next, a refusal reaches the caller
// with its code, and a client carrying the interceptor is not affected.
func TestAround(t *testing.T) {
	var served, seen atomic.Int32
	var last atomic.Value // Call
	f := func(ctx context.Context, c Call, next func(context.Context) error) error {
		seen.Add(1)
		last.Store(c)
		if c.Header.Get("X-Refuse") != "" {
			return connect.NewError(connect.CodePermissionDenied, errors.New("refused"))
		}
		return next(ctx)
	}
	opt := connect.WithInterceptors(Around(f))
	mux := http.NewServeMux()
	mux.Handle("/t.T/Unary", connect.NewUnaryHandler("/t.T/Unary",
		func(context.Context, *connect.Request[emptypb.Empty]) (*connect.Response[emptypb.Empty], error) {
			served.Add(1)
			return connect.NewResponse(&emptypb.Empty{}), nil
		}, opt))
	mux.Handle("/t.T/Stream", connect.NewServerStreamHandler("/t.T/Stream",
		func(_ context.Context, _ *connect.Request[emptypb.Empty], s *connect.ServerStream[emptypb.Empty]) error {
			served.Add(1)
			return s.Send(&emptypb.Empty{})
		}, opt))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The client carries the interceptor too: it must not see the
	// client's side of the calls.
	unary := connect.NewClient[emptypb.Empty, emptypb.Empty](srv.Client(), srv.URL+"/t.T/Unary", opt)
	stream := connect.NewClient[emptypb.Empty, emptypb.Empty](srv.Client(), srv.URL+"/t.T/Stream", opt)
	call := func(refuse bool, streaming bool) error {
		req := connect.NewRequest(&emptypb.Empty{})
		req.Header().Set("X-Test", "yes")
		if refuse {
			req.Header().Set("X-Refuse", "1")
		}
		if !streaming {
			res, err := unary.CallUnary(context.Background(), req)
			if err == nil && res.Msg == nil {
				t.Error("unary answer without a message")
			}
			return err
		}
		s, err := stream.CallServerStream(context.Background(), req)
		if err != nil {
			return err
		}
		defer s.Close()
		n := 0
		for s.Receive() {
			n++
		}
		if s.Err() == nil && n != 1 {
			t.Errorf("stream: %d messages, want 1", n)
		}
		return s.Err()
	}
	for _, streaming := range []bool{false, true} {
		served.Store(0)
		seen.Store(0)
		if err := call(false, streaming); err != nil {
			t.Fatalf("streaming=%v: %v", streaming, err)
		}
		if served.Load() != 1 || seen.Load() != 1 {
			t.Errorf("streaming=%v: served %d, f saw %d, want 1 and 1 (the client's side must not reach f)", streaming, served.Load(), seen.Load())
		}
		c := last.Load().(Call)
		want := "/t.T/Unary"
		if streaming {
			want = "/t.T/Stream"
		}
		if c.Spec.Procedure != want || c.Spec.IsClient || c.Header.Get("X-Test") != "yes" || c.Peer.Protocol != connect.ProtocolConnect {
			t.Errorf("f saw %+v, want %s from the handler side with the header", c, want)
		}
		if err := call(true, streaming); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("streaming=%v: refusal answered %v", streaming, err)
		}
		if served.Load() != 1 {
			t.Errorf("streaming=%v: a refused call ran", streaming)
		}
	}
}
