package alloc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/connectfast/connectfasttest"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// fronted is one Service behind two servers: the HTTP/1.1 front with
// FastRoutes (net/http behind it, counted), and net/http alone, the
// reference. Both share the ID source, so IDs interleave between them.
type fronted struct {
	url, ref string
	slow     *atomic.Int64
	front    *h1.Server
}

func newFronted(t *testing.T) *fronted {
	t.Helper()
	svc := NewService("n1", &svcFakeSegments{only: "order"})
	mux := serveMux(svc)
	ref := httptest.NewServer(mux)
	t.Cleanup(ref.Close)
	url, slow, front := connectfasttest.ServeH1(t, mux, svc.FastRoutes(1<<20, slog.New(slog.DiscardHandler)))
	return &fronted{url: url, ref: ref.URL, slow: slow, front: front}
}

// onFront fails unless, since before, the front served served more
// requests and handed nothing to net/http.
func (f *fronted) onFront(t *testing.T, before h1.Stats, served uint64) {
	t.Helper()
	st := f.front.Stats()
	if st.Served-before.Served != served || f.slow.Load() != 0 {
		t.Fatalf("front served %d, net/http %d; want %d on the front", st.Served-before.Served, f.slow.Load(), served)
	}
	for reason, n := range st.HandOffs {
		if n != before.HandOffs[reason] {
			t.Fatalf("%d connections handed off for %s; want none", n-before.HandOffs[reason], reason)
		}
	}
}

func TestFastRoutesNextIDs(t *testing.T) {
	f := newFronted(t)
	c := seqsvrv1connect.NewAllocServiceClient(connectfasttest.H1Client(t), f.url)
	ctx := context.Background()
	ref := seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, f.ref)
	// Front and reference share the ID source: their IDs must follow one
	// another exactly.
	var last int64
	counts := []int32{0, 1, 1000, spec.MaxCount, 7}
	for _, count := range counts {
		res, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: count}))
		if err != nil {
			t.Fatalf("count %d: %v", count, err)
		}
		ids := res.Msg.GetIds()
		if len(ids) != max(int(count), 1) || res.Header().Get("Content-Type") != "application/proto" {
			t.Fatalf("count %d: %d ids, Content-Type %q", count, len(ids), res.Header().Get("Content-Type"))
		}
		for _, id := range ids {
			if id != last+1 {
				t.Fatalf("count %d: id %d after %d", count, id, last)
			}
			last = id
		}
		next, err := ref.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order"}))
		if err != nil || len(next.Msg.GetIds()) != 1 || next.Msg.GetIds()[0] != last+1 {
			t.Fatalf("net/http after %d: %v %v", last, next, err)
		}
		last++
	}
	f.onFront(t, h1.Stats{}, uint64(len(counts)))
}

// Rejections answer the code and message connect-go gives through
// net/http, from the front.
func TestFastRoutesNextIDsErrorsLikeNetHTTP(t *testing.T) {
	f := newFronted(t)
	fast := seqsvrv1connect.NewAllocServiceClient(connectfasttest.H1Client(t), f.url)
	ref := seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, f.ref)
	ctx := context.Background()
	cases := map[string]*seqsvrv1.NextIDsRequest{
		"bad tag":       {Tag: "bad tag!", Count: 1},
		"no tag":        {},
		"long tag":      {Tag: strings.Repeat("t", 129)},
		"count -1":      {Tag: "order", Count: -1},
		"count too big": {Tag: "order", Count: spec.MaxCount + 1},
		"unknown tag":   {Tag: "nope", Count: 1},
	}
	for name, req := range cases {
		_, ferr := fast.NextIDs(ctx, connect.NewRequest(req))
		_, rerr := ref.NextIDs(ctx, connect.NewRequest(req))
		var fce, rce *connect.Error
		if !errors.As(ferr, &fce) || !errors.As(rerr, &rce) {
			t.Fatalf("%s: front %v, net/http %v; want errors", name, ferr, rerr)
		}
		if fce.Code() != rce.Code() || fce.Message() != rce.Message() {
			t.Fatalf("%s: front %v %q; net/http %v %q", name, fce.Code(), fce.Message(), rce.Code(), rce.Message())
		}
		if name == "unknown tag" && fce.Code() != connect.CodeNotFound {
			t.Fatalf("unknown tag: %v, want not_found", fce)
		}
	}
	f.onFront(t, h1.Stats{}, uint64(len(cases)))
}

// NextIDRanges is answered on the front too, with the IDs that follow
// net/http's and the same errors.
func TestFastRoutesNextIDRanges(t *testing.T) {
	f := newFronted(t)
	c := seqsvrv1connect.NewAllocServiceClient(connectfasttest.H1Client(t), f.url)
	ref := seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, f.ref)
	ctx := context.Background()
	var last int64
	counts := []int32{0, 1, spec.MaxCount + 1, spec.MaxRangeCount}
	for _, count := range counts {
		res, err := c.NextIDRanges(ctx, connect.NewRequest(&seqsvrv1.NextIDRangesRequest{Tag: "order", Count: count}))
		if err != nil {
			t.Fatalf("count %d: %v", count, err)
		}
		rs := res.Msg.GetRanges()
		if want := last + int64(max(count, 1)); len(rs) != 1 || rs[0].GetFirst() != last+1 || rs[0].GetLast() != want {
			t.Fatalf("count %d after %d: %v", count, last, rs)
		}
		last = rs[0].GetLast()
		next, err := ref.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order"}))
		if err != nil || len(next.Msg.GetIds()) != 1 || next.Msg.GetIds()[0] != last+1 {
			t.Fatalf("net/http after %d: %v %v", last, next, err)
		}
		last++
	}
	cases := map[string]*seqsvrv1.NextIDRangesRequest{
		"bad tag":       {Tag: "bad tag!", Count: 1},
		"count -1":      {Tag: "order", Count: -1},
		"count too big": {Tag: "order", Count: spec.MaxRangeCount + 1},
		"unknown tag":   {Tag: "nope", Count: 1},
	}
	for name, req := range cases {
		_, ferr := c.NextIDRanges(ctx, connect.NewRequest(req))
		_, rerr := ref.NextIDRanges(ctx, connect.NewRequest(req))
		var fce, rce *connect.Error
		if !errors.As(ferr, &fce) || !errors.As(rerr, &rce) {
			t.Fatalf("%s: front %v, net/http %v; want errors", name, ferr, rerr)
		}
		if fce.Code() != rce.Code() || fce.Message() != rce.Message() {
			t.Fatalf("%s: front %v %q; net/http %v %q", name, fce.Code(), fce.Message(), rce.Code(), rce.Message())
		}
	}
	_, err := c.NextIDRanges(ctx, connect.NewRequest(cases["count too big"]))
	if ce := new(connect.Error); !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument || !strings.Contains(ce.Message(), "1..1000000") {
		t.Fatalf("count too big: %v, want invalid_argument naming the bound", err)
	}
	f.onFront(t, h1.Stats{}, uint64(len(counts)+len(cases)+1))
}

// leafGetter is a client that does not follow redirects, so a redirect is
// compared as an answer.
func leafGetter(hc *http.Client) *http.Client {
	return &http.Client{Transport: hc.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type leafAnswer struct {
	status int
	header http.Header // without Date
	body   string
}

func getLeaf(t *testing.T, hc *http.Client, url string) leafAnswer {
	t.Helper()
	res, err := leafGetter(hc).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	res.Header.Del("Date")
	return leafAnswer{res.StatusCode, res.Header, string(b)}
}

func (a leafAnswer) equal(b leafAnswer) bool {
	return a.status == b.status && a.body == b.body && maps.EqualFunc(a.header, b.header, func(x, y []string) bool {
		return strings.Join(x, "\n") == strings.Join(y, "\n")
	})
}

func TestFastRoutesLeafSegment(t *testing.T) {
	f := newFronted(t)
	hc := connectfasttest.H1Client(t)
	// Front and reference share the ID source: their IDs must follow one
	// another exactly.
	var last int64
	for range 3 {
		a := getLeaf(t, hc, f.url+"/api/segment/get/order")
		want := getLeaf(t, http.DefaultClient, f.ref+"/api/segment/get/order")
		id, err := strconv.ParseInt(a.body, 10, 64)
		next, _ := strconv.ParseInt(want.body, 10, 64)
		if a.status != http.StatusOK || err != nil || id != last+1 || next != id+1 {
			t.Fatalf("front %d %q, then net/http %q, after %d; want 200 and the next plain numbers", a.status, a.body, want.body, last)
		}
		last = next
		want.header.Del("Content-Length")
		a.header.Del("Content-Length")
		want.body = a.body
		if !a.equal(want) {
			t.Fatalf("front answered %+v; net/http %+v", a, want)
		}
		if a.header.Get("Content-Type") != "text/plain; charset=utf-8" || a.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("headers %v", a.header)
		}
	}
	paths := map[string]int{
		"/api/segment/get/nope":                        http.StatusNotFound,
		"/api/segment/get/~order":                      http.StatusBadRequest,
		"/api/segment/get/" + strings.Repeat("t", 129): http.StatusBadRequest,
	}
	for path, status := range paths {
		a, want := getLeaf(t, hc, f.url+path), getLeaf(t, http.DefaultClient, f.ref+path)
		if a.status != status || !a.equal(want) || strings.Count(a.body, "\n") != 1 || !strings.HasSuffix(a.body, "\n") {
			t.Fatalf("%s: front answered %+v; net/http %+v; want %d and one line", path, a, want, status)
		}
	}
	f.onFront(t, h1.Stats{}, uint64(3+len(paths)))
}

// A tag net/http's mux would decode or clean is left to it, and the front's
// caller gets net/http's answer.
func TestFastRoutesLeafDeclinesEscapes(t *testing.T) {
	f := newFronted(t)
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/api/segment/get/ord%65r", http.StatusOK},
		{"/api/segment/get/bad%20tag", http.StatusBadRequest},
		{"/api/segment/get/.", http.StatusTemporaryRedirect},
		{"/api/segment/get/..", http.StatusTemporaryRedirect},
		{"/api/segment/get/a/../order", http.StatusTemporaryRedirect},
		{"/api/segment/get/order/", http.StatusNotFound},
	} {
		path := tc.path
		t.Run(strings.TrimPrefix(path, "/api/segment/get/"), func(t *testing.T) {
			f.leafDeclined(t, path, tc.status)
		})
	}
}

// A GET with a body is left to net/http, whose route applies
// --max-body-bytes; the front would otherwise burn an ID for it.
func TestFastRoutesLeafDeclinesBody(t *testing.T) {
	f := newFronted(t)
	req, err := http.NewRequest(http.MethodGet, f.url+"/api/segment/get/order", strings.NewReader("a body"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := connectfasttest.H1Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if st := f.front.Stats(); st.Served != 0 || st.HandOffs["declined"] != 1 || f.slow.Load() != 1 {
		t.Fatalf("front served %d, declined %d, net/http got %d; want 0, 1, 1", st.Served, st.HandOffs["declined"], f.slow.Load())
	}
}

func TestAppendIDsMatchesProtoMarshal(t *testing.T) {
	for _, ids := range [][]int64{{1}, {0}, {1, 2, 3}, {1 << 40, 1<<40 + 1}, {127, 128, 16383, 16384}, {5, 3, 1 << 20}, {-1, 1}, {1<<63 - 1}, {300, 200, 300},
		{1 << 14, 1<<14 + 1}, {1 << 21, 1<<21 + 7}, {1 << 28, 1<<28 + 9}, {1 << 35, 1<<35 + 2}, {1 << 56, 1<<56 + 1}, {2, 3, 4}} {
		want, err := proto.Marshal(&seqsvrv1.NextIDsResponse{Ids: ids})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendIDs(nil, ids); string(got) != string(want) {
			t.Fatalf("%v: got %x, want %x", ids, got, want)
		}
	}
}

// leafDeclined checks that the front declines GET path: net/http answers
// it once, the front serves nothing, and the answer is the one net/http
// alone gives (a fresh ID on both sides when it is 200).
func (f *fronted) leafDeclined(t *testing.T, path string, status int) {
	t.Helper()
	before, st := f.slow.Load(), f.front.Stats()
	a, want := getLeaf(t, connectfasttest.H1Client(t), f.url+path), getLeaf(t, http.DefaultClient, f.ref+path)
	if a.status == http.StatusOK {
		if _, err := strconv.ParseInt(a.body, 10, 64); err != nil {
			t.Fatalf("200 with body %q", a.body)
		}
		want.body = a.body
		want.header.Del("Content-Length")
		a.header.Del("Content-Length")
	}
	if a.status != status || !a.equal(want) {
		t.Fatalf("front answered %+v; net/http %+v; want %d", a, want, status)
	}
	after := f.front.Stats()
	if f.slow.Load() != before+1 || after.Served != st.Served || after.HandOffs["declined"] != st.HandOffs["declined"]+1 {
		t.Fatalf("net/http got %d, front served %d, declined %d; want 1, 0, 1",
			f.slow.Load()-before, after.Served-st.Served, after.HandOffs["declined"]-st.HandOffs["declined"])
	}
}
