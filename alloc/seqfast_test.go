package alloc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/seqsvr/seqsvr/alloc/seq"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/connectfast/connectfasttest"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// twoOwnerStore is a store of one space "s" of 100 keys in two sections of
// 50: section 0 is n1's, section 1 n2's, each at its URL, leases of a
// minute. Raises follow the store's rule (max_seq + step, or known_max +
// step when that is higher; a first load answers prev_max).
type twoOwnerStore struct {
	urls map[string]string // node -> URL
	mu   sync.Mutex
	max  [2]int64
}

func (f *twoOwnerStore) SeqHeartbeat(_ context.Context, _ *seqsvrv1.SeqHeartbeatRequest) (*seqsvrv1.SeqHeartbeatResponse, error) {
	now := time.Now()
	exp := now.Add(time.Minute).UnixMilli()
	return &seqsvrv1.SeqHeartbeatResponse{LeaseTtlMs: time.Minute.Milliseconds(), LeaseExpiresMs: exp, LeaderNowMs: now.UnixMilli(),
		Tables: []*seqsvrv1.RoutingTable{{Space: "s", KeyCount: 100, SectionSize: 50, RoutingVersion: 4, Sections: []*seqsvrv1.SectionRange{
			{FirstSection: 0, LastSection: 0, Owner: "n1", OwnerUrl: f.urls["n1"], LeaseExpiresMs: exp},
			{FirstSection: 1, LastSection: 1, Owner: "n2", OwnerUrl: f.urls["n2"], LeaseExpiresMs: exp},
		}}}}, nil
}

func (f *twoOwnerStore) RaiseSections(_ context.Context, req *seqsvrv1.RaiseSectionsRequest) (*seqsvrv1.RaiseSectionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const step = 1000
	res := &seqsvrv1.RaiseSectionsResponse{RoutingVersion: 4}
	for _, r := range req.GetSections() {
		prev := f.max[r.GetSection()]
		next := prev + step
		if r.GetKnownMax() != -1 {
			next = max(prev, r.GetKnownMax()+step)
		}
		f.max[r.GetSection()] = next
		res.Sections = append(res.Sections, &seqsvrv1.SectionMax{Section: r.GetSection(), PrevMax: prev, MaxSeq: next})
	}
	return res, nil
}

// seqFronted is allocsvr n1 with real per-key sequences behind the front
// (fronted's shape: url through the front, ref through net/http alone, on
// one Service and one seq.Node), and allocsvr n2, serving section 1, that
// n1 forwards to.
func seqFronted(t *testing.T) *fronted {
	t.Helper()
	mux, peerMux := http.NewServeMux(), http.NewServeMux()
	ref, peer := httptest.NewServer(mux), httptest.NewServer(peerMux)
	t.Cleanup(ref.Close)
	t.Cleanup(peer.Close)
	store := &twoOwnerStore{urls: map[string]string{"n2": peer.URL}}
	node := func(id, url string) *seq.Node {
		n, err := seq.New(store, seq.Config{NodeID: id, URL: url, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		n.Start(ctx)
		t.Cleanup(func() { cancel(); n.Close() })
		for end := time.Now().Add(5 * time.Second); !n.Status().GetLeaseValid(); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: no lease", id)
			}
		}
		return n
	}
	n2 := node("n2", peer.URL)
	peerMux.Handle(seqsvrv1connect.NewSeqServiceHandler(n2.Handler()))

	svc := NewService("n1", &svcFakeSegments{only: "order"})
	mux.Handle(seqsvrv1connect.NewAllocServiceHandler(svc))
	for p, h := range svc.LeafRoutes() {
		mux.Handle(p, h)
	}
	url, slow, front := connectfasttest.ServeH1(t, mux, svc.FastRoutes(1<<20, slog.New(slog.DiscardHandler)))
	store.urls["n1"] = url // before n1's first heartbeat: the table is read-only from then on
	n1 := node("n1", url)
	mux.Handle(seqsvrv1connect.NewSeqServiceHandler(n1.Handler()))
	svc.SetSeq(n1)
	return &fronted{url: url, ref: ref.URL, slow: slow, front: front}
}

// postAnswer is a raw HTTP answer, Date left out.
type postAnswer struct {
	status int
	ctype  string
	body   []byte
}

// postNextSeq POSTs a Connect binary unary NextSeq with body to base and
// returns the answer as bytes.
func postNextSeq(t *testing.T, hc *http.Client, base string, body []byte, header ...string) postAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+seqsvrv1connect.SeqServiceNextSeqProcedure, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/proto")
	req.Header.Set("Connect-Protocol-Version", "1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
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
	return postAnswer{res.StatusCode, res.Header.Get("Content-Type"), b}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The front serves a NextSeq of this allocsvr's key with the bytes
// connect-go sends; values follow those net/http hands out for the key.
func TestFastRoutesNextSeq(t *testing.T) {
	f := seqFronted(t)
	hc := connectfasttest.H1Client(t)
	var last int64
	for _, key := range []uint64{7, 7, 0, 49, 7} {
		body := marshal(t, &seqsvrv1.NextSeqRequest{Space: "s", Key: key})
		a := postNextSeq(t, hc, f.url, body)
		want := postNextSeq(t, http.DefaultClient, f.ref, body)
		var got, next seqsvrv1.NextSeqResponse
		if a.status != http.StatusOK || want.status != http.StatusOK || a.ctype != want.ctype ||
			proto.Unmarshal(a.body, &got) != nil || proto.Unmarshal(want.body, &next) != nil {
			t.Fatalf("key %d: front %d %q %x; net/http %d %q %x", key, a.status, a.ctype, a.body, want.status, want.ctype, want.body)
		}
		if next.GetSeq() != got.GetSeq()+1 || got.GetRoutingVersion() != 4 || next.GetRoutingVersion() != 4 {
			t.Fatalf("key %d: front %v then net/http %v; want consecutive values at routing_version 4", key, &got, &next)
		}
		// The same message from connect-go is the same bytes.
		if again := marshal(t, &seqsvrv1.NextSeqResponse{Seq: got.GetSeq() + 1, RoutingVersion: 4}); !bytes.Equal(again, want.body) {
			t.Fatalf("key %d: net/http sent %x for %v, proto.Marshal gives %x", key, want.body, &next, again)
		}
		if key == 7 {
			if next.GetSeq() <= last {
				t.Fatalf("key 7: %d after %d", next.GetSeq(), last)
			}
			last = next.GetSeq()
		}
	}
	// A connect-go client reads it too.
	c := seqsvrv1connect.NewSeqServiceClient(hc, f.url)
	res, err := c.NextSeq(context.Background(), connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: "s", Key: 7}))
	if err != nil || res.Msg.GetSeq() != last+1 {
		t.Fatalf("connect-go client: %v, %v; want %d", res, err, last+1)
	}
	f.onFront(t, h1.Stats{}, 6)
}

// Rejections answer from the front the status and body connect-go sends
// through net/http.
func TestFastRoutesNextSeqErrorsLikeNetHTTP(t *testing.T) {
	f := seqFronted(t)
	hc := connectfasttest.H1Client(t)
	cases := map[string][]byte{
		"unknown space":   marshal(t, &seqsvrv1.NextSeqRequest{Space: "nope", Key: 1}),
		"malformed space": marshal(t, &seqsvrv1.NextSeqRequest{Space: "a b", Key: 1}),
		"no space":        marshal(t, &seqsvrv1.NextSeqRequest{Key: 1}),
		"long space":      marshal(t, &seqsvrv1.NextSeqRequest{Space: strings.Repeat("s", 129)}),
		"key = key_count": marshal(t, &seqsvrv1.NextSeqRequest{Space: "s", Key: 100}),
		"huge key":        marshal(t, &seqsvrv1.NextSeqRequest{Space: "s", Key: 1 << 63}),
		"not proto":       []byte("\xff\xff\xff"),
	}
	for name, body := range cases {
		a, want := postNextSeq(t, hc, f.url, body), postNextSeq(t, http.DefaultClient, f.ref, body)
		if a.status == http.StatusOK || a.status != want.status || a.ctype != want.ctype || !bytes.Equal(a.body, want.body) {
			t.Fatalf("%s: front %d %q %s; net/http %d %q %s", name, a.status, a.ctype, a.body, want.status, want.ctype, want.body)
		}
		if name == "unknown space" && a.status != http.StatusNotFound {
			t.Fatalf("unknown space: %d %s, want 404 (not_found)", a.status, a.body)
		}
	}
	f.onFront(t, h1.Stats{}, uint64(len(cases)))
}

// The front declines a key another allocsvr serves, and a call marked
// forwarded, before taking anything: net/http and the SeqService handler
// answer (forwarding the first, refusing the second), as without the
// front.
func TestFastRoutesNextSeqFallsThrough(t *testing.T) {
	f := seqFronted(t)
	for _, tc := range []struct {
		name   string
		key    uint64
		header []string
		status int
	}{
		{"n2's key", 60, nil, http.StatusOK},
		{"n2's key again", 60, nil, http.StatusOK},
		{"forwarded, n2's key", 60, []string{seq.ForwardedHeader, "1"}, http.StatusServiceUnavailable},
		{"forwarded, own key", 7, []string{seq.ForwardedHeader, "1"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, st := f.slow.Load(), f.front.Stats()
			body := marshal(t, &seqsvrv1.NextSeqRequest{Space: "s", Key: tc.key})
			a := postNextSeq(t, connectfasttest.H1Client(t), f.url, body, tc.header...)
			want := postNextSeq(t, http.DefaultClient, f.ref, body, tc.header...)
			if a.status != tc.status || want.status != tc.status || a.ctype != want.ctype {
				t.Fatalf("front %d %q %s; net/http %d %q %s; want %d", a.status, a.ctype, a.body, want.status, want.ctype, want.body, tc.status)
			}
			if tc.status == http.StatusOK {
				var got, next seqsvrv1.NextSeqResponse
				if proto.Unmarshal(a.body, &got) != nil || proto.Unmarshal(want.body, &next) != nil || next.GetSeq() != got.GetSeq()+1 {
					t.Fatalf("front %x then net/http %x: want consecutive values", a.body, want.body)
				}
			} else if !bytes.Equal(a.body, want.body) {
				t.Fatalf("front %s; net/http %s", a.body, want.body)
			}
			after := f.front.Stats()
			if f.slow.Load() != before+1 || after.Served != st.Served || after.HandOffs["declined"] != st.HandOffs["declined"]+1 {
				t.Fatalf("net/http behind the front got %d, front served %d, declined %d; want 1, 0, 1",
					f.slow.Load()-before, after.Served-st.Served, after.HandOffs["declined"]-st.HandOffs["declined"])
			}
		})
	}
}

// Without per-key sequences the front leaves NextSeq to net/http, which
// has no SeqService: the same 404 as before.
func TestFastRoutesNextSeqWithoutSeq(t *testing.T) {
	f := newFronted(t)
	body := marshal(t, &seqsvrv1.NextSeqRequest{Space: "s", Key: 1})
	a, want := postNextSeq(t, connectfasttest.H1Client(t), f.url, body), postNextSeq(t, http.DefaultClient, f.ref, body)
	if a.status != http.StatusNotFound || a.status != want.status || !bytes.Equal(a.body, want.body) || f.slow.Load() != 1 {
		t.Fatalf("front %d %s; net/http %d %s; net/http behind the front got %d", a.status, a.body, want.status, want.body, f.slow.Load())
	}
}

// GET /api/seq/next/{space}/{key} on the front: this allocsvr's keys and
// the errors it answers itself are net/http's answers; another allocsvr's
// key, and paths net/http's mux would decode or clean, are declined.
func TestFastRoutesLeafSeqNext(t *testing.T) {
	f := seqFronted(t)
	hc := connectfasttest.H1Client(t)
	for range 3 {
		a := getLeaf(t, hc, f.url+"/api/seq/next/s/7")
		want := getLeaf(t, http.DefaultClient, f.ref+"/api/seq/next/s/7")
		v, err := strconv.ParseInt(a.body, 10, 64)
		next, _ := strconv.ParseInt(want.body, 10, 64)
		if a.status != http.StatusOK || err != nil || next != v+1 {
			t.Fatalf("front %d %q, then net/http %q; want 200 and consecutive values", a.status, a.body, want.body)
		}
		want.header.Del("Content-Length")
		a.header.Del("Content-Length")
		want.body = a.body
		if !a.equal(want) {
			t.Fatalf("front answered %+v; net/http %+v", a, want)
		}
	}
	paths := map[string]int{
		"/api/seq/next/nope/1":                 http.StatusNotFound,
		"/api/seq/next/s/100":                  http.StatusBadRequest,
		"/api/seq/next/s/x":                    http.StatusBadRequest,
		"/api/seq/next/s/-1":                   http.StatusBadRequest,
		"/api/seq/next/s/1e3":                  http.StatusBadRequest,
		"/api/seq/next/~s/1":                   http.StatusBadRequest,
		"/api/seq/next/s/99999999999999999999": http.StatusBadRequest,
	}
	for path, status := range paths {
		a, want := getLeaf(t, hc, f.url+path), getLeaf(t, http.DefaultClient, f.ref+path)
		if a.status != status || !a.equal(want) || strings.Count(a.body, "\n") != 1 {
			t.Fatalf("%s: front answered %+v; net/http %+v; want %d and one line", path, a, want, status)
		}
	}
	f.onFront(t, h1.Stats{}, uint64(3+len(paths)))

	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/api/seq/next/s/60", http.StatusOK}, // n2's: forwarded by net/http
		{"/api/seq/next/s/%37", http.StatusOK},
		{"/api/seq/next/s/7/", http.StatusNotFound},
		{"/api/seq/next/s/", http.StatusNotFound},
		{"/api/seq/next/s", http.StatusNotFound},
		{"/api/seq/next/s/../7", http.StatusTemporaryRedirect},
	} {
		t.Run(tc.path, func(t *testing.T) {
			f.leafDeclined(t, tc.path, tc.status)
		})
	}
}

func TestAppendNextSeqMatchesProtoMarshal(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, -1, 1<<63 - 1, -1 << 63} {
		for _, ver := range []uint64{0, 1, 300, 1<<64 - 1} {
			want := marshal(t, &seqsvrv1.NextSeqResponse{Seq: v, RoutingVersion: ver})
			if got := appendNextSeq([]byte{}, v, ver); !bytes.Equal(got, want) {
				t.Fatalf("%d, %d: got %x, want %x", v, ver, got, want)
			}
		}
	}
}
