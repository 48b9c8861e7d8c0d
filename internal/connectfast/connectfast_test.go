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
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const procedure = "/test.v1.Echo/Echo"

// binaryRequest is what a connect-go client sends for a unary binary call.
func binaryRequest(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, procedure, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/proto")
	r.Header.Set("Connect-Protocol-Version", "1")
	return r
}

func TestEligible(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*http.Request)
		want bool
	}{
		"binary unary":          {func(*http.Request) {}, true},
		"no protocol version":   {func(r *http.Request) { r.Header.Del("Connect-Protocol-Version") }, true},
		"body at the limit":     {func(r *http.Request) { r.ContentLength = 64 }, true},
		"body over the limit":   {func(r *http.Request) { r.ContentLength = 65 }, false},
		"unknown length":        {func(r *http.Request) { r.ContentLength = -1 }, false},
		"GET":                   {func(r *http.Request) { r.Method = http.MethodGet }, false},
		"json":                  {func(r *http.Request) { r.Header.Set("Content-Type", "application/json") }, false},
		"grpc":                  {func(r *http.Request) { r.Header.Set("Content-Type", "application/grpc") }, false},
		"two content types":     {func(r *http.Request) { r.Header.Add("Content-Type", "application/proto") }, false},
		"protocol version 2":    {func(r *http.Request) { r.Header.Set("Connect-Protocol-Version", "2") }, false},
		"two versions":          {func(r *http.Request) { r.Header.Add("Connect-Protocol-Version", "1") }, false},
		"compressed":            {func(r *http.Request) { r.Header.Set("Content-Encoding", "gzip") }, false},
		"deadline":              {func(r *http.Request) { r.Header.Set("Connect-Timeout-Ms", "100") }, true},
		"deadline of 10 digits": {func(r *http.Request) { r.Header.Set("Connect-Timeout-Ms", "9999999999") }, true},
		"deadline of 11 digits": {func(r *http.Request) { r.Header.Set("Connect-Timeout-Ms", "99999999999") }, false},
		"malformed deadline":    {func(r *http.Request) { r.Header.Set("Connect-Timeout-Ms", "1s") }, false},
		"empty deadline":        {func(r *http.Request) { r.Header.Set("Connect-Timeout-Ms", "") }, false},
		"two deadlines": {func(r *http.Request) {
			r.Header.Add("Connect-Timeout-Ms", "1")
			r.Header.Add("Connect-Timeout-Ms", "2")
		}, false},
		"empty content type":   {func(r *http.Request) { r.Header.Del("Content-Type") }, false},
		"empty body, no limit": {func(r *http.Request) { r.ContentLength = 0 }, true},
	} {
		r := binaryRequest(make([]byte, 10))
		tc.edit(r)
		if got := Eligible(r, 64); got != tc.want {
			t.Errorf("%s: Eligible = %v, want %v", name, got, tc.want)
		}
	}
}

// echo answers the request message itself, marshalled again.
func echo(_ context.Context, body []byte) ([]byte, error) {
	var m wrapperspb.StringValue
	if err := Decode(body, &m); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{}.MarshalAppend(body[:0], &m)
}

// serveOnce runs one request through Handler(serve) in front of a next
// that records whether it was called and the body it saw.
func serveOnce(t *testing.T, r *http.Request, serve Func) (*httptest.ResponseRecorder, bool, []byte) {
	t.Helper()
	var called bool
	var seen []byte
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		seen, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusTeapot)
	})
	rec := httptest.NewRecorder()
	Handler(procedure, next, 64, slog.New(slog.DiscardHandler), serve).ServeHTTP(rec, r)
	return rec, called, seen
}

func TestHandlerAnswers(t *testing.T) {
	in, _ := proto.Marshal(wrapperspb.String("hello"))
	rec, called, _ := serveOnce(t, binaryRequest(in), echo)
	if called {
		t.Fatal("an eligible request reached next")
	}
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/proto" || rec.Header().Get("Content-Length") != "7" {
		t.Fatalf("status %d, header %v", rec.Code, rec.Header())
	}
	var got wrapperspb.StringValue
	if err := proto.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.GetValue() != "hello" {
		t.Fatalf("answer %q (%v)", got.GetValue(), err)
	}
}

func TestHandlerPassesOthersOn(t *testing.T) {
	in := []byte{0x0a, 0x01, 'x'}
	other := binaryRequest(in)
	other.URL.Path = "/test.v1.Echo/Other"
	big := binaryRequest(make([]byte, 65))
	js := binaryRequest(in)
	js.Header.Set("Content-Type", "application/json")
	for name, r := range map[string]*http.Request{"other procedure": other, "body over the limit": big, "json": js} {
		rec, called, seen := serveOnce(t, r, func(context.Context, []byte) ([]byte, error) {
			t.Fatalf("%s: reached the fast path", name)
			return nil, nil
		})
		if !called || rec.Code != http.StatusTeapot {
			t.Fatalf("%s: next called %v, status %d", name, called, rec.Code)
		}
		if name != "body over the limit" && !bytes.Equal(seen, in) {
			t.Fatalf("%s: next saw body %x, want %x", name, seen, in)
		}
	}
}

func TestHandlerFallThroughRestoresBody(t *testing.T) {
	in := []byte{0x0a, 0x03, 'a', 'b', 'c'}
	rec, called, seen := serveOnce(t, binaryRequest(in), func(_ context.Context, body []byte) ([]byte, error) {
		if !bytes.Equal(body, in) {
			t.Fatalf("body %x, want %x", body, in)
		}
		return nil, ErrFallThrough
	})
	if !called || rec.Code != http.StatusTeapot || !bytes.Equal(seen, in) {
		t.Fatalf("next called %v, status %d, body %x; want the body %x", called, rec.Code, seen, in)
	}
}

// connectAnswer is connect-go's own answer to r from a unary handler
// that returns err (or, with err nil, the echo of the request).
func connectAnswer(t *testing.T, r *http.Request, err error) *httptest.ResponseRecorder {
	t.Helper()
	h := connect.NewUnaryHandler(procedure, func(_ context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(req.Msg), nil
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// sameAnswer fails unless the fast path and connect-go gave the same
// status, Content-Type and body.
func sameAnswer(t *testing.T, name string, fast, slow *httptest.ResponseRecorder) {
	t.Helper()
	if fast.Code != slow.Code || fast.Header().Get("Content-Type") != slow.Header().Get("Content-Type") || fast.Body.String() != slow.Body.String() {
		t.Fatalf("%s: fast path answered %d %q %s; connect-go %d %q %s", name,
			fast.Code, fast.Header().Get("Content-Type"), fast.Body, slow.Code, slow.Header().Get("Content-Type"), slow.Body)
	}
}

func TestErrorAnswerIsConnects(t *testing.T) {
	in, _ := proto.Marshal(wrapperspb.String("hello"))
	for _, err := range []error{
		connect.NewError(connect.CodeNotFound, errors.New("tag not found")),
		connect.NewError(connect.CodeUnavailable, errors.New("no leader")),
		connect.NewError(connect.CodeInvalidArgument, errors.New(`bad "tag"`)),
	} {
		fast, _, _ := serveOnce(t, binaryRequest(in), func(context.Context, []byte) ([]byte, error) { return nil, err })
		sameAnswer(t, err.Error(), fast, connectAnswer(t, binaryRequest(in), err))
	}
	// A success is the same bytes too.
	fast, _, _ := serveOnce(t, binaryRequest(in), echo)
	sameAnswer(t, "success", fast, connectAnswer(t, binaryRequest(in), nil))
}

func TestBadBodyIsInvalidArgument(t *testing.T) {
	short := binaryRequest([]byte{0x0a, 0x05, 'a'})
	short.ContentLength = 10 // the body ends early
	for name, r := range map[string]*http.Request{
		"garbage":   binaryRequest([]byte{0xff, 0xff, 0xff}),
		"truncated": binaryRequest([]byte{0x0a, 0x05, 'a'}),
		"short":     short,
	} {
		rec, called, _ := serveOnce(t, r, echo)
		if called {
			t.Fatalf("%s: reached next", name)
		}
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":"invalid_argument"`) {
			t.Fatalf("%s: %d %s, want invalid_argument", name, rec.Code, rec.Body)
		}
	}
}

func TestPanicIsInternal(t *testing.T) {
	var logged bytes.Buffer
	rec := httptest.NewRecorder()
	h := Handler(procedure, http.NotFoundHandler(), 64, slog.New(slog.NewTextHandler(&logged, nil)),
		func(context.Context, []byte) ([]byte, error) { panic("boom") })
	h.ServeHTTP(rec, binaryRequest([]byte{0x0a, 0x01, 'x'}))
	want := connectAnswer(t, binaryRequest([]byte{0x0a, 0x01, 'x'}), connect.NewError(connect.CodeInternal, errors.New("internal error")))
	sameAnswer(t, "panic", rec, want)
	if !strings.Contains(logged.String(), "boom") {
		t.Fatalf("panic not logged: %q", logged.String())
	}
}

// Connect-Timeout-Ms becomes the RPC's deadline, and running out of it
// answers deadline_exceeded, as connect-go does.
func TestHandlerAppliesTimeout(t *testing.T) {
	in, _ := proto.Marshal(wrapperspb.String("hello"))
	r := binaryRequest(in)
	r.Header.Set("Connect-Timeout-Ms", "20")
	var left time.Duration
	waitOut := func(ctx context.Context, _ []byte) ([]byte, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("no deadline")
		}
		left = time.Until(dl)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	rec, called, _ := serveOnce(t, r, waitOut)
	if called {
		t.Fatal("a request with a well-formed timeout reached next")
	}
	if left <= 0 || left > 20*time.Millisecond {
		t.Fatalf("deadline %v away, want within 20ms", left)
	}
	if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), `"deadline_exceeded"`) {
		t.Fatalf("status %d body %s, want 504 deadline_exceeded", rec.Code, rec.Body.String())
	}
}
