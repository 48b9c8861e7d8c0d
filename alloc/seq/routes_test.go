package seq

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/routes/routestest"
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

// startNode starts node id of store at url, with a real clock, and waits
// for its lease.
func startNode(t *testing.T, store Store, id, url string) *Node {
	t.Helper()
	n, err := New(store, Config{NodeID: id, URL: url, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.Start(ctx)
	t.Cleanup(func() { cancel(); n.Close() })
	poll.Until(t, 5*time.Second, id+"'s lease", func() bool { return n.Status().GetLeaseValid() })
	return n
}

// SeqService's front route against connect-go: n1 serves section 0 (keys
// 0-49) of space "s", n2 section 1, which n1's handler forwards to.
func TestRoutesMatchConnect(t *testing.T) {
	next := func(name string, req *seqsvrv1.NextSeqRequest, front bool, header ...string) routestest.Case {
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return routestest.Case{Name: name, Path: seqsvrv1connect.SeqServiceNextSeqProcedure, Header: routestest.Connect(header...), Body: b, Front: front}
	}
	routestest.Check(t, func(t *testing.T) routes.Table {
		store := &twoOwnerStore{urls: map[string]string{"n1": "http://n1.invalid"}}
		mux := newMux()
		peer := httptest.NewServer(mux)
		t.Cleanup(peer.Close)
		store.urls["n2"] = peer.URL
		mux.set(routestest.Mount(startNode(t, store, "n2", peer.URL).Routes()))
		return startNode(t, store, "n1", store.urls["n1"]).Routes()
	}, []routestest.Case{
		next("key 7", &seqsvrv1.NextSeqRequest{Space: "s", Key: 7}, true),
		next("key 7 again", &seqsvrv1.NextSeqRequest{Space: "s", Key: 7}, true),
		next("key 0", &seqsvrv1.NextSeqRequest{Space: "s", Key: 0}, true),
		next("key 49", &seqsvrv1.NextSeqRequest{Space: "s", Key: 49}, true),
		next("key 7 within a deadline", &seqsvrv1.NextSeqRequest{Space: "s", Key: 7}, true, "Connect-Timeout-Ms", "60000"),
		next("unknown space", &seqsvrv1.NextSeqRequest{Space: "nope", Key: 1}, true),
		next("malformed space", &seqsvrv1.NextSeqRequest{Space: "a b", Key: 1}, true),
		next("no space", &seqsvrv1.NextSeqRequest{Key: 1}, true),
		next("long space", &seqsvrv1.NextSeqRequest{Space: strings.Repeat("s", 129)}, true),
		next("key = key_count", &seqsvrv1.NextSeqRequest{Space: "s", Key: 100}, true),
		next("huge key", &seqsvrv1.NextSeqRequest{Space: "s", Key: 1 << 63}, true),
		{Name: "not proto", Path: seqsvrv1connect.SeqServiceNextSeqProcedure, Header: routestest.Connect(), Body: []byte("\xff\xff\xff"), Front: true},
		next("n2's key", &seqsvrv1.NextSeqRequest{Space: "s", Key: 60}, false),
		next("n2's key again", &seqsvrv1.NextSeqRequest{Space: "s", Key: 60}, false),
		next("forwarded, n2's key", &seqsvrv1.NextSeqRequest{Space: "s", Key: 60}, false, ForwardedHeader, "1"),
		next("forwarded, own key", &seqsvrv1.NextSeqRequest{Space: "s", Key: 7}, false, ForwardedHeader, "1"),
		next("forwarded header of another value", &seqsvrv1.NextSeqRequest{Space: "s", Key: 7}, false, ForwardedHeader, "0"),
		next("key 7 after", &seqsvrv1.NextSeqRequest{Space: "s", Key: 7}, true),
	})
}

// mux is a handler set after its server started (n2's routes need its URL).
type mux struct {
	mu sync.Mutex
	h  http.Handler
}

func newMux() *mux { return &mux{h: http.NotFoundHandler()} }

func (m *mux) set(h http.Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.h = h
}

func (m *mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	h := m.h
	m.mu.Unlock()
	h.ServeHTTP(w, r)
}

func TestAppendNextSeqMatchesProtoMarshal(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, -1, 1<<63 - 1, -1 << 63} {
		for _, ver := range []uint64{0, 1, 300, 1<<64 - 1} {
			want, err := proto.Marshal(&seqsvrv1.NextSeqResponse{Seq: v, RoutingVersion: ver})
			if err != nil {
				t.Fatal(err)
			}
			if got := appendNextSeq([]byte{}, v, ver); !bytes.Equal(got, want) {
				t.Fatalf("%d, %d: got %x, want %x", v, ver, got, want)
			}
		}
	}
}
