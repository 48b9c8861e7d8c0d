package main

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// methods records the HTTP method and path of every request sent.
type methods struct {
	mu   sync.Mutex
	seen map[string][]string // path -> methods
	next http.RoundTripper
}

func (m *methods) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.seen[r.URL.Path] = append(m.seen[r.URL.Path], r.Method)
	m.mu.Unlock()
	return m.next.RoundTrip(r)
}

// retry calls f until it succeeds (a new space reaches an allocsvr at its
// next heartbeat; the snowflake worker registers in the background).
func retry(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	poll.UntilCtx(ctx, t, what, func() bool { err = f(); return err == nil })
	if err != nil {
		t.Fatal(what, err)
	}
}

// Every NO_SIDE_EFFECTS RPC of both binaries answers a Connect GET, in
// JSON and in binary, with the HTTP/1.1 front on (it hands the GET to
// net/http) and off; the ID-handing RPCs refuse GET; a binary NextIDs on
// a fresh connection is still the front's with it on, and the per-RPC
// metrics count it.
func TestConnectGETThroughTheFront(t *testing.T) {
	launchtest.EachFastHTTP(t, func(t *testing.T, flags []string) {
		c := launchtest.StartCluster(t, 3, 1, flags, flags)
		s1, a1 := c.Stores[0].URL(), c.Allocs[0].URL()
		launchtest.WantFront(t, a1, flags)
		ctx := launchtest.Context(t, 60*time.Second)
		if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "g", Step: 100}); err != nil {
			t.Fatal(err)
		}
		if err := c.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: "gs", KeyCount: 100, SectionSize: 50, Step: 10}); err != nil {
			t.Fatal(err)
		}
		rec := &methods{seen: map[string][]string{}, next: &http.Transport{}} // HTTP/1.1: the front's protocol
		hc := &http.Client{Transport: rec}
		for _, codec := range []connect.ClientOption{connect.WithProtoJSON(), connect.WithCodec(nil)} {
			opts := []connect.ClientOption{connect.WithHTTPGet(), connect.WithHTTPGetMaxURLSize(4096, true)}
			if codec != nil {
				opts = append(opts, codec)
			}
			store := seqsvrv1connect.NewStoreServiceClient(hc, s1, opts...)
			alloc := seqsvrv1connect.NewAllocServiceClient(hc, a1, opts...)
			seq := seqsvrv1connect.NewSeqServiceClient(hc, a1, opts...)
			var sf int64
			retry(ctx, t, "NextSnowflakeIDs", func() error {
				r, err := alloc.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 1}))
				if err == nil {
					sf = r.Msg.GetIds()[0]
				}
				return err
			})
			ids, err := alloc.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "g", Count: 3}))
			if err != nil {
				t.Fatal(err)
			}
			tag, err := store.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "g"}))
			if err != nil || tag.Msg.GetMaxId() < ids.Msg.GetIds()[2] {
				t.Fatalf("GetTag over GET: %v %v", tag, err)
			}
			if _, err := store.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "nope"})); connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("GetTag of an unknown tag over GET: %v, want not_found", err)
			}
			for what, call := range map[string]func() error{
				"ListTags": func() error {
					_, err := store.ListTags(ctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{}))
					return err
				},
				"ClusterStatus": func() error {
					_, err := store.ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
					return err
				},
				"GetSpace": func() error {
					_, err := store.GetSpace(ctx, connect.NewRequest(&seqsvrv1.GetSpaceRequest{Space: "gs"}))
					return err
				},
				"ListSpaces": func() error {
					_, err := store.ListSpaces(ctx, connect.NewRequest(&seqsvrv1.ListSpacesRequest{}))
					return err
				},
				"GetRouting": func() error {
					_, err := store.GetRouting(ctx, connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: "gs"}))
					return err
				},
				"Status": func() error { _, err := alloc.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{})); return err },
				"DecodeSnowflake": func() error {
					d, err := alloc.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: sf}))
					if err == nil && d.Msg.GetTimestampMs() == 0 {
						return errors.New("no timestamp")
					}
					return err
				},
				"CurrentSeqs": func() error {
					_, err := seq.CurrentSeqs(ctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: "gs", Keys: []uint64{1, 99}}))
					return err
				},
				"Routing": func() error {
					_, err := seq.Routing(ctx, connect.NewRequest(&seqsvrv1.RoutingRequest{Space: "gs"}))
					return err
				},
			} {
				retry(ctx, t, what, call)
			}
		}
		for path, ms := range rec.seen {
			want := http.MethodGet
			if slices.Contains([]string{seqsvrv1connect.AllocServiceNextIDsProcedure, seqsvrv1connect.AllocServiceNextSnowflakeIDsProcedure}, path) {
				want = http.MethodPost
			}
			for _, m := range ms {
				if m != want {
					t.Errorf("%s sent as %s, want %s", path, m, want)
				}
			}
		}
		if len(rec.seen) != 12 {
			t.Errorf("%d procedures called, want 12 (10 by GET): %v", len(rec.seen), rec.seen)
		}
		// An ID-handing RPC is never served on GET, with or without the front.
		res, err := http.Get(a1 + seqsvrv1connect.AllocServiceNextIDsProcedure + "?connect=v1&encoding=json&message=%7B%22tag%22%3A%22g%22%7D")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET NextIDs: %d, want 405", res.StatusCode)
		}
		// A binary NextIDs on a fresh connection: the front's, when on.
		before, _ := launchtest.Metric(t, a1, "seqsvr_http_fast_requests_total")
		bin := seqsvrv1connect.NewAllocServiceClient(&http.Client{Transport: &http.Transport{}}, a1)
		if _, err := bin.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "g"})); err != nil {
			t.Fatal(err)
		}
		after, on := launchtest.Metric(t, a1, "seqsvr_http_fast_requests_total")
		if on && after != before+1 {
			t.Errorf("the front answered %v binary NextIDs, want 1", after-before)
		}
		for base, series := range map[string]string{
			a1: `rpc_server_handled_total{rpc_code="ok",rpc_method="NextIDs",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"}`,
			s1: `rpc_server_handled_total{rpc_code="not_found",rpc_method="GetTag",rpc_protocol="connect",rpc_service="seqsvr.v1.StoreService"}`,
		} {
			if v, _ := launchtest.Metric(t, base, series); v < 2 {
				t.Errorf("%s: %s = %v, want >= 2", base, series, v)
			}
		}
	})
}
