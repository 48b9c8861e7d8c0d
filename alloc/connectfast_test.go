package alloc

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/connectfast/connectfasttest"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// fastServer serves svc with the fast path in front of connect-go and
// counts the requests that fell through to connect-go.
func fastServer(t *testing.T, seg SegmentSource) (string, *atomic.Int64) {
	svc := NewService("n1", seg)
	_, h := seqsvrv1connect.NewAllocServiceHandler(svc)
	return connectfasttest.Serve(t, h, func(next http.Handler) http.Handler { return svc.NextIDsFastPath(next, 1<<20, nil) })
}

func TestNextIDsFastPathAnswersLikeConnect(t *testing.T) {
	seg := &svcFakeSegments{}
	url, slow := fastServer(t, seg)
	ctx := context.Background()
	c := seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, url)

	for _, count := range []int32{0, 1, 1000} {
		res, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: count}))
		if err != nil {
			t.Fatalf("count %d: %v", count, err)
		}
		want := max(int(count), 1)
		if len(res.Msg.GetIds()) != want {
			t.Fatalf("count %d: got %d ids", count, len(res.Msg.GetIds()))
		}
		for i := 1; i < len(res.Msg.Ids); i++ {
			if res.Msg.Ids[i] <= res.Msg.Ids[i-1] {
				t.Fatalf("ids not increasing at %d: %v", i, res.Msg.Ids[i-1:i+1])
			}
		}
		if ct := res.Header().Get("Content-Type"); ct != "application/proto" {
			t.Fatalf("content type %q", ct)
		}
	}
	if n := slow.Load(); n != 0 {
		t.Fatalf("%d binary Connect calls fell through to connect-go; want the fast path", n)
	}

	// Bad input answers the contract's code and reaches no allocator.
	calls := seg.callCount()
	for _, req := range []*seqsvrv1.NextIDsRequest{{Tag: "order", Count: -1}, {Tag: "order", Count: 10001}, {Tag: "bad tag!", Count: 1}, {}} {
		_, err := c.NextIDs(ctx, connect.NewRequest(req))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("%v: got %v, want invalid_argument", req, err)
		}
	}
	if seg.callCount() != calls {
		t.Fatal("a request that failed validation reached the allocator")
	}
	// Allocator errors keep their code.
	seg.err = errs.Unavailable
	if _, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order"})); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("got %v, want unavailable", err)
	}
	seg.err = nil
	if n := slow.Load(); n != 0 {
		t.Fatalf("%d error answers came from connect-go; want the fast path", n)
	}
}

func TestNextIDsFastPathFallsThrough(t *testing.T) {
	url, slow := fastServer(t, &svcFakeSegments{})
	ctx := context.Background()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	clients := map[string]seqsvrv1connect.AllocServiceClient{
		"json":      seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, url, connect.WithProtoJSON()),
		"gzip-sent": seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, url, connect.WithSendGzip(), connect.WithCompressMinBytes(0)),
		"grpc":      seqsvrv1connect.NewAllocServiceClient(h2c, url, connect.WithGRPC()),
		"grpc-web":  seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, url, connect.WithGRPCWeb()),
	}
	for name, c := range clients {
		before := slow.Load()
		res, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: 3}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Msg.GetIds()) != 3 {
			t.Fatalf("%s: got %d ids", name, len(res.Msg.GetIds()))
		}
		if slow.Load() == before {
			t.Fatalf("%s: served by the fast path; want connect-go", name)
		}
	}
	// A deadline travels as Connect-Timeout-Ms: the fast path applies it as
	// connect-go would, so only the JSON call goes to connect-go.
	before := slow.Load()
	dctx, cancel := context.WithTimeout(ctx, 1<<40)
	defer cancel()
	if _, err := clients["json"].NextIDs(dctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order"})); err != nil {
		t.Fatal(err)
	}
	bin := seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, url)
	if _, err := bin.NextIDs(dctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order"})); err != nil {
		t.Fatal(err)
	}
	if got := slow.Load() - before; got != 1 {
		t.Fatalf("%d of 2 calls with a deadline reached connect-go, want only the JSON one", got)
	}
}

func TestNextIDsFastPathMalformedBody(t *testing.T) {
	url, _ := fastServer(t, &svcFakeSegments{})
	for name, body := range map[string][]byte{"garbage": {0xff, 0xff, 0xff}, "truncated": {0x0a, 0x05, 'a'}} {
		req, _ := http.NewRequest(http.MethodPost, url+seqsvrv1connect.AllocServiceNextIDsProcedure, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/proto")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: status %d, want 400 (invalid_argument)", name, res.StatusCode)
		}
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
