package connectfast

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/seqsvr/seqsvr/internal/connectfast/connectfasttest"
	"github.com/seqsvr/seqsvr/internal/h1"
)

const procedure = "/test.v1.Echo/Echo"

// echo answers the request message itself, marshalled again.
func echo(_ context.Context, body []byte) ([]byte, error) {
	var m wrapperspb.StringValue
	if err := Decode(body, &m); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{}.MarshalAppend(body[:0], &m)
}

// echoUnary is connect-go's own implementation of echo, answering err
// instead when it is set.
func echoUnary(err error) func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
	return func(_ context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(req.Msg), nil
	}
}

// recoverInternal is the panic recovery the processes give connect-go
// (cmd/internal/serve.ConnectOptions).
var recoverInternal = connect.WithRecover(func(context.Context, connect.Spec, http.Header, any) error {
	return connect.NewError(connect.CodeInternal, errors.New("internal error"))
})

// bodyRecorder is a net/http handler that keeps the last request body it
// got and hands the request on with that body.
type bodyRecorder struct {
	next http.Handler
	mu   sync.Mutex
	last []byte
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.last = body
	b.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	b.next.ServeHTTP(w, r)
}

func (b *bodyRecorder) body() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// front serves procedure with H1(serve) on the HTTP/1.1 front, and with
// connect-go's echo behind it for what the front hands off.
func front(t *testing.T, serve Func) (string, *bodyRecorder, *h1.Server, func() int64) {
	t.Helper()
	slow := &bodyRecorder{next: connect.NewUnaryHandler(procedure, echoUnary(nil), recoverInternal)}
	var m h1.Mux
	m.Handle(procedure, H1(64, slog.New(slog.DiscardHandler), serve))
	url, n, srv := connectfasttest.ServeH1(t, slow, &m)
	return url, slow, srv, n.Load
}

// reference serves procedure with connect-go alone on net/http (HTTP/1.1
// and h2c), answering with impl.
func reference(t *testing.T, impl func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error)) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(connect.NewUnaryHandler(procedure, impl, recoverInternal))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func echoClient(hc connect.HTTPClient, url string, opts ...connect.ClientOption) *connect.Client[wrapperspb.StringValue, wrapperspb.StringValue] {
	return connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](hc, url+procedure, opts...)
}

// headerTransport sets headers on every request a client sends, for the
// Connect headers connect-go's client writes itself.
type headerTransport struct {
	base http.RoundTripper
	set  map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func withHeaders(hc *http.Client, set map[string]string) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: headerTransport{base: base, set: set}}
}

func wantNoHandOffs(t *testing.T, srv *h1.Server) {
	t.Helper()
	for reason, n := range srv.Stats().HandOffs {
		if n != 0 {
			t.Fatalf("%d connections handed off for %s; want none", n, reason)
		}
	}
}

func TestH1ServesConnectClient(t *testing.T) {
	var deadline bool
	url, _, srv, slow := front(t, func(ctx context.Context, body []byte) ([]byte, error) {
		_, deadline = ctx.Deadline()
		return echo(ctx, body)
	})
	c := echoClient(connectfasttest.H1Client(t), url)
	dctx, cancel := context.WithTimeout(context.Background(), 1<<40)
	defer cancel()
	// The deadline travels as Connect-Timeout-Ms, which the front applies.
	for i, ctx := range []context.Context{context.Background(), dctx, context.Background(), dctx} {
		msg := strings.Repeat("x", i) + "hello"
		res, err := c.CallUnary(ctx, connect.NewRequest(wrapperspb.String(msg)))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if _, want := ctx.Deadline(); deadline != want {
			t.Fatalf("call %d: the RPC had a deadline %v, want %v", i, deadline, want)
		}
		if res.Msg.GetValue() != msg || res.Header().Get("Content-Type") != "application/proto" {
			t.Fatalf("call %d: %q, Content-Type %q", i, res.Msg.GetValue(), res.Header().Get("Content-Type"))
		}
	}
	if st := srv.Stats(); st.Served != 4 || slow() != 0 {
		t.Fatalf("front served %d, net/http %d; want all 4 on the front", st.Served, slow())
	}
	wantNoHandOffs(t, srv)
}

// Errors from the front decode in a connect-go client as the same code and
// message, and are the same bytes on the wire, as connect-go's own.
func TestH1ErrorsAreConnects(t *testing.T) {
	var logged bytes.Buffer
	var logMu sync.Mutex
	for name, tc := range map[string]struct {
		fast Func
		ref  error
	}{
		"not found":   {errFunc(connect.NewError(connect.CodeNotFound, errors.New("tag not found"))), connect.NewError(connect.CodeNotFound, errors.New("tag not found"))},
		"unavailable": {errFunc(connect.NewError(connect.CodeUnavailable, errors.New("no leader"))), connect.NewError(connect.CodeUnavailable, errors.New("no leader"))},
		"quoted":      {errFunc(connect.NewError(connect.CodeInvalidArgument, errors.New("bad \"tag\"\n"))), connect.NewError(connect.CodeInvalidArgument, errors.New("bad \"tag\"\n"))},
		"plain error": {errFunc(errors.New("disk on fire")), errors.New("disk on fire")},
		"panic": {func(context.Context, []byte) ([]byte, error) { panic("boom") },
			connect.NewError(connect.CodeInternal, errors.New("internal error"))},
	} {
		t.Run(name, func(t *testing.T) {
			var m h1.Mux
			logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))
			m.Handle(procedure, H1(64, logger, tc.fast))
			url, slow, srv := connectfasttest.ServeH1(t, http.NotFoundHandler(), &m)
			ref := reference(t, echoUnary(tc.ref))
			sameError(t, connectfasttest.H1Client(t), url, ref, nil)
			if srv.Stats().Served != 2 || slow.Load() != 0 {
				t.Fatalf("front served %d, net/http %d; want both calls on the front", srv.Stats().Served, slow.Load())
			}
			wantNoHandOffs(t, srv)
		})
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "boom") {
		t.Fatalf("panic not logged: %q", logged.String())
	}
}

// A deadline from Connect-Timeout-Ms that runs out is deadline_exceeded,
// as connect-go answers it. The header is set by hand: a connect-go client
// with that deadline would give up first and answer for the server.
func TestH1DeadlineIsConnects(t *testing.T) {
	waitOut := func(ctx context.Context, _ []byte) ([]byte, error) {
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline")
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	url, _, srv, slow := front(t, waitOut)
	ref := reference(t, func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	err := sameError(t, connectfasttest.H1Client(t), url, ref, map[string]string{"Connect-Timeout-Ms": "20"})
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("got %v, want deadline_exceeded", err)
	}
	if srv.Stats().Served != 2 || slow() != 0 {
		t.Fatalf("front served %d, net/http %d; want both calls on the front", srv.Stats().Served, slow())
	}
}

// Connect-Timeout-Ms: 0 is a deadline already over: connect-go answers
// deadline_exceeded without calling the RPC, and the front must too, even
// for an RPC that would have answered at once. (connect-go's clients never
// send 0; other clients may.)
func TestH1ZeroTimeoutIsConnects(t *testing.T) {
	var called atomic.Int64
	echo := func(_ context.Context, b []byte) ([]byte, error) {
		called.Add(1)
		return b, nil
	}
	url, _, srv, _ := front(t, echo)
	ref := reference(t, func(_ context.Context, r *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		return connect.NewResponse(r.Msg), nil
	})
	err := sameError(t, connectfasttest.H1Client(t), url, ref, map[string]string{"Connect-Timeout-Ms": "0"})
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("got %v, want deadline_exceeded", err)
	}
	if called.Load() != 0 || srv.Stats().Served == 0 {
		t.Fatalf("RPC called %d times, front served %d; want 0 and the front answering", called.Load(), srv.Stats().Served)
	}
}

func errFunc(err error) Func {
	return func(context.Context, []byte) ([]byte, error) { return nil, err }
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sameError calls the front at url and connect-go at ref, with a connect-go
// client and then with a raw request, both with the headers set, and fails
// unless both answer the same error. It returns the front's error.
func sameError(t *testing.T, hc *http.Client, url, ref string, set map[string]string) error {
	t.Helper()
	in := wrapperspb.String("hello")
	_, ferr := echoClient(withHeaders(hc, set), url).CallUnary(context.Background(), connect.NewRequest(in))
	_, rerr := echoClient(withHeaders(http.DefaultClient, set), ref).CallUnary(context.Background(), connect.NewRequest(in))
	var fce, rce *connect.Error
	if !errors.As(ferr, &fce) || !errors.As(rerr, &rce) {
		t.Fatalf("front answered %v, connect-go %v; want errors", ferr, rerr)
	}
	if fce.Code() != rce.Code() || fce.Message() != rce.Message() {
		t.Fatalf("front: %v %q; connect-go: %v %q", fce.Code(), fce.Message(), rce.Code(), rce.Message())
	}
	body, _ := proto.Marshal(in)
	fs, fct, fb := post(t, hc, url, body, set)
	rs, rct, rb := post(t, http.DefaultClient, ref, body, set)
	if fs != rs || fct != rct || fb != rb {
		t.Fatalf("front answered %d %q %s; connect-go %d %q %s", fs, fct, fb, rs, rct, rb)
	}
	return ferr
}

// post sends body as a Connect unary binary call, as connect-go's client
// does, and returns the status, Content-Type and body of the answer.
func post(t *testing.T, hc *http.Client, url string, body []byte, set map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+procedure, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/proto")
	req.Header.Set("Connect-Protocol-Version", "1")
	for k, v := range set {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), string(b)
}

// Requests the fast path must not answer go, with their connection, to
// net/http, and get connect-go's answer.
func TestH1IneligibleGoesToNetHTTP(t *testing.T) {
	url, _, srv, slow := front(t, func(context.Context, []byte) ([]byte, error) {
		t.Error("an ineligible request reached the fast path")
		return nil, errors.New("unreachable")
	})
	ref := reference(t, echoUnary(nil))
	h2c := func(t *testing.T) *http.Client {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: &p}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	plain := func(t *testing.T) *http.Client { return connectfasttest.H1Client(t) }
	header := func(k, v string) func(*testing.T) *http.Client {
		return func(t *testing.T) *http.Client {
			return withHeaders(connectfasttest.H1Client(t), map[string]string{k: v})
		}
	}
	for name, tc := range map[string]struct {
		client func(*testing.T) *http.Client
		opts   []connect.ClientOption
		msg    string
		reason string
	}{
		"json":                {plain, []connect.ClientOption{connect.WithProtoJSON()}, "hello", "declined"},
		"gzip":                {plain, []connect.ClientOption{connect.WithSendGzip(), connect.WithCompressMinBytes(0)}, "hello", "declined"},
		"body over the limit": {plain, nil, strings.Repeat("x", 100), "declined"},
		"malformed timeout":   {header("Connect-Timeout-Ms", "1s"), nil, "hello", "declined"},
		"negative timeout":    {header("Connect-Timeout-Ms", "-5"), nil, "hello", "declined"},
		"protocol version 2":  {header("Connect-Protocol-Version", "2"), nil, "hello", "declined"},
		"grpc over h2c":       {h2c, []connect.ClientOption{connect.WithGRPC()}, "hello", "unsupported"},
	} {
		t.Run(name, func(t *testing.T) {
			before, st := slow(), srv.Stats()
			res, err := echoClient(tc.client(t), url, tc.opts...).CallUnary(context.Background(), connect.NewRequest(wrapperspb.String(tc.msg)))
			want, werr := echoClient(tc.client(t), ref, tc.opts...).CallUnary(context.Background(), connect.NewRequest(wrapperspb.String(tc.msg)))
			switch {
			case err == nil && werr == nil:
				if res.Msg.GetValue() != want.Msg.GetValue() {
					t.Fatalf("answered %q, connect-go %q", res.Msg.GetValue(), want.Msg.GetValue())
				}
			case err == nil || werr == nil:
				t.Fatalf("front: %v; connect-go: %v", err, werr)
			default:
				var fce, rce *connect.Error
				if !errors.As(err, &fce) || !errors.As(werr, &rce) || fce.Code() != rce.Code() || fce.Message() != rce.Message() {
					t.Fatalf("front: %v; connect-go: %v", err, werr)
				}
			}
			after := srv.Stats()
			if slow() != before+1 || after.Served != st.Served || after.HandOffs[tc.reason] != st.HandOffs[tc.reason]+1 {
				t.Fatalf("net/http got %d, front served %d, %s hand-offs %d; want 1, 0, 1",
					slow()-before, after.Served-st.Served, tc.reason, after.HandOffs[tc.reason]-st.HandOffs[tc.reason])
			}
		})
	}
}

// An RPC that falls through has net/http serve the request with the body
// as the client sent it, whatever the RPC did to its copy.
func TestH1FallThroughReplaysBody(t *testing.T) {
	var saw []byte
	url, rec, srv, slow := front(t, func(_ context.Context, body []byte) ([]byte, error) {
		saw = append(saw[:0], body...)
		for i := range body {
			body[i] = 0xff
		}
		return nil, ErrFallThrough
	})
	in := wrapperspb.String("fall through")
	want, _ := proto.Marshal(in)
	res, err := echoClient(connectfasttest.H1Client(t), url).CallUnary(context.Background(), connect.NewRequest(in))
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.GetValue() != in.GetValue() {
		t.Fatalf("answered %q, want %q", res.Msg.GetValue(), in.GetValue())
	}
	if !bytes.Equal(saw, want) || !bytes.Equal(rec.body(), want) {
		t.Fatalf("the RPC saw %x, net/http %x; want both %x", saw, rec.body(), want)
	}
	if st := srv.Stats(); slow() != 1 || st.Served != 0 || st.HandOffs["declined"] != 1 {
		t.Fatalf("net/http got %d, front served %d, declined %d; want 1, 0, 1", slow(), st.Served, st.HandOffs["declined"])
	}
}

// A body that does not decode is invalid_argument, the same bytes as
// connect-go's answer, from the front itself.
func TestH1BadBodyIsConnects(t *testing.T) {
	url, _, srv, slow := front(t, echo)
	ref := reference(t, echoUnary(nil))
	hc := connectfasttest.H1Client(t)
	for name, body := range map[string][]byte{
		"garbage":   {0xff, 0xff, 0xff},
		"truncated": {0x0a, 0x05, 'a'},
	} {
		fs, fct, fb := post(t, hc, url, body, nil)
		rs, rct, rb := post(t, http.DefaultClient, ref, body, nil)
		if fs != http.StatusBadRequest || !strings.Contains(fb, `"code":"invalid_argument"`) {
			t.Fatalf("%s: front answered %d %s, want invalid_argument", name, fs, fb)
		}
		if fs != rs || fct != rct || fb != rb {
			t.Fatalf("%s: front answered %d %q %s; connect-go %d %q %s", name, fs, fct, fb, rs, rct, rb)
		}
	}
	if srv.Stats().Served != 2 || slow() != 0 {
		t.Fatalf("front served %d, net/http %d; want both on the front", srv.Stats().Served, slow())
	}
}
