// Package routestest checks a routes.Table the one way that matters: every
// front route answers what its connect-go or net/http handler answers, byte
// for byte, and declines exactly what it should. ServeH1 and H1Client
// serve and call front routes in other tests.
package routestest

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// MaxBodyBytes is the body bound both servers of Check apply.
const MaxBodyBytes = 1 << 10

// Case is one request Check sends to both servers.
type Case struct {
	Name   string
	Method string // "" means POST
	Path   string
	Header http.Header // a Connect binary call: see Connect
	Body   []byte
	// Front says the front must answer it; otherwise it must decline it,
	// and net/http behind the front answers.
	Front bool
}

// Connect is the header of a Connect binary unary call, as connect-go's
// client sends it, with extra name/value pairs set on top (an empty value
// removes the header).
func Connect(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"application/proto"}, "Connect-Protocol-Version": {"1"}}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			h.Del(extra[i])
			continue
		}
		h.Set(extra[i], extra[i+1])
	}
	return h
}

// Check builds two tables with newTable, each over state of its own
// started the same way, so the same calls in the same order get the same
// answers. One is served by the HTTP/1.1 front (Table.Front) with net/http
// behind it, the other by net/http alone (connect-go and the plain
// routes): the reference. Every case goes to both on a connection of its
// own, in order, and Check fails unless the answers have the same status,
// headers (but Date and framing: Content-Length or chunked) and body, and the front answered exactly the cases
// marked Front. Every front route of the table must answer at least one
// case. The connect-go handlers get the body bound and errs' recovery, as
// the processes give them.
func Check(t *testing.T, newTable func(t *testing.T) routes.Table, cases []Case) {
	t.Helper()
	mount := func(tb routes.Table) *http.ServeMux {
		return Mount(tb, connect.WithReadMaxBytes(MaxBodyBytes), errs.RecoverOption(slog.New(slog.DiscardHandler)))
	}
	front := newTable(t)
	url, slow, srv := ServeH1(t, mount(front), front.Front(MaxBodyBytes, slog.New(slog.DiscardHandler)))
	ref := httptest.NewServer(mount(newTable(t)))
	t.Cleanup(ref.Close)

	answered := map[string]bool{} // method and path of the cases the front answered
	for _, c := range cases {
		served, handed := srv.Stats().Served, slow.Load()
		got, want := call(t, c, url), call(t, c, ref.URL)
		if !got.equal(want) {
			t.Errorf("%s: front answered %v\nnet/http answered %v", c.Name, got, want)
		}
		onFront := srv.Stats().Served-served == 1 && slow.Load() == handed
		declined := srv.Stats().Served == served && slow.Load() == handed+1
		switch {
		case c.Front && !onFront:
			t.Errorf("%s: the front did not answer it (it answered %d, net/http %d)", c.Name, srv.Stats().Served-served, slow.Load()-handed)
		case !c.Front && !declined:
			t.Errorf("%s: the front did not decline it (it answered %d, net/http %d)", c.Name, srv.Stats().Served-served, slow.Load()-handed)
		case c.Front:
			answered[c.method()+" "+c.Path] = true
		}
	}
	for _, p := range front.Procedures {
		if p.HasFast() && !answered[http.MethodPost+" "+p.Name] {
			t.Errorf("no case was answered by the front route of %s", p.Name)
		}
	}
	for _, r := range front.Routes {
		if r.Fast == nil {
			continue
		}
		method, _, _ := strings.Cut(r.Pattern, " ")
		if !slices.ContainsFunc(slices.Collect(maps.Keys(answered)), func(k string) bool {
			return strings.HasPrefix(k, method+" "+r.FrontPattern())
		}) {
			t.Errorf("no case was answered by the front route of %q", r.Pattern)
		}
	}
}

// Mount serves t's services (built with opts) and plain routes on a new
// ServeMux, as the processes' net/http side does.
func Mount(t routes.Table, opts ...connect.HandlerOption) *http.ServeMux {
	mux := http.NewServeMux()
	for _, s := range t.Services(opts...) {
		mux.Handle(s.Path, s.Handler)
	}
	for p, h := range t.HTTP() {
		mux.Handle(p, http.MaxBytesHandler(h, MaxBodyBytes))
	}
	return mux
}

func (c Case) method() string {
	if c.Method == "" {
		return http.MethodPost
	}
	return c.Method
}

// answer is one HTTP answer, Date and framing left out.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) equal(b answer) bool {
	return a.status == b.status && bytes.Equal(a.body, b.body) && maps.EqualFunc(a.header, b.header, slices.Equal)
}

func (a answer) String() string {
	return fmt.Sprintf("%d | %s| %.200q", a.status, headerText(a.header), a.body)
}

func headerText(h http.Header) string {
	var b strings.Builder
	_ = h.Write(&b)
	return strings.ReplaceAll(b.String(), "\r\n", "; ")
}

// call sends c to base on a new connection (the front hands a declined
// connection to net/http for good), without redirects or compression, so
// the answer is what the server wrote.
func call(t *testing.T, c Case, base string) answer {
	t.Helper()
	req, err := http.NewRequest(c.method(), base+c.Path, bytes.NewReader(c.Body))
	if err != nil {
		t.Fatal(err)
	}
	if c.Body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	req.Header = c.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	// Framing is each server's own: net/http sends a large answer chunked.
	res.Header.Del("Date")
	res.Header.Del("Content-Length")
	return answer{res.StatusCode, res.Header, body}
}
