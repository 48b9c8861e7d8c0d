package storage

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
)

// fastServer serves n's store with the fast path in front of connect-go
// and counts the requests that reached connect-go.
func fastServer(t *testing.T, n *testNode) (seqsvrv1connect.StoreServiceClient, string, *atomic.Int64) {
	_, h := seqsvrv1connect.NewStoreServiceHandler(n.store.Service())
	url, slow := connectfasttest.Serve(t, h, func(next http.Handler) http.Handler { return n.store.ReserveFastPath(next, 1<<20, testLogger()) })
	// HTTP/1.1, binary proto, no deadline: what takes the fast path.
	return seqsvrv1connect.NewStoreServiceClient(http.DefaultClient, url), url, slow
}

func TestReserveFastPathOnLeader(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.client().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil {
		t.Fatal(err)
	}
	cl, url, slow := fastServer(t, leader)

	var last int64
	for i := 0; i < 3; i++ {
		res, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 5}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Msg.GetFirst() != last+1 || res.Msg.GetLast() != last+5 || res.Msg.GetStep() != 10 || res.Msg.GetTag() != "t" {
			t.Fatalf("segment %v after %d", res.Msg, last)
		}
		last = res.Msg.GetLast()
	}
	// A retried request_id gets the same segment back.
	a, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", RequestId: "r1"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", RequestId: "r1"}))
	if err != nil || a.Msg.GetFirst() != b.Msg.GetFirst() || a.Msg.GetLast() != b.Msg.GetLast() {
		t.Fatalf("retry: %v / %v, %v", a.Msg, b.Msg, err)
	}
	before := stateOf(leader.store.fsm)
	for name, tc := range map[string]struct {
		req  *seqsvrv1.ReserveSegmentRequest
		code connect.Code
	}{
		"unknown tag":   {&seqsvrv1.ReserveSegmentRequest{Tag: "nope"}, connect.CodeNotFound},
		"bad tag":       {&seqsvrv1.ReserveSegmentRequest{Tag: "a/b"}, connect.CodeInvalidArgument},
		"negative size": {&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: -1}, connect.CodeInvalidArgument},
		"empty":         {&seqsvrv1.ReserveSegmentRequest{}, connect.CodeInvalidArgument},
	} {
		if _, err := cl.ReserveSegment(ctx, connect.NewRequest(tc.req)); connect.CodeOf(err) != tc.code {
			t.Fatalf("%s: got %v, want %v", name, err, tc.code)
		}
	}
	if n := slow.Load(); n != 0 {
		t.Fatalf("%d binary calls reached connect-go on the leader; want the fast path", n)
	}
	if got := stateOf(leader.store.fsm); !proto.Equal(got, before) {
		t.Fatal("a rejected reservation changed the state")
	}

	// Malformed bodies answer invalid_argument (HTTP 400).
	req, _ := http.NewRequest(http.MethodPost, url+seqsvrv1connect.StoreServiceReserveSegmentProcedure, bytes.NewReader([]byte{0x0a, 0x09, 't'}))
	req.Header.Set("Content-Type", "application/proto")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("truncated body: status %d, want 400", res.StatusCode)
	}

	// Other codecs and other RPCs go to connect-go; a call with a deadline
	// (what connect-go clients send whenever ctx has one) stays fast.
	n := slow.Load()
	js := seqsvrv1connect.NewStoreServiceClient(http.DefaultClient, url, connect.WithProtoJSON())
	if _, err := js.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t"})); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "t"})); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 1<<40)
	defer cancel()
	if _, err := cl.ReserveSegment(dctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t"})); err != nil {
		t.Fatal(err)
	}
	if got := slow.Load() - n; got != 2 {
		t.Fatalf("%d calls reached connect-go, want the JSON one and GetTag", got)
	}
}

// On a follower the fast path proposes nothing and the service forwards.
func TestReserveFastPathFollowerForwards(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.client().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil {
		t.Fatal(err)
	}
	follower := c.followers(leader)[0]
	cl, _, slow := fastServer(t, follower)
	res, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.GetFirst() != 1 || res.Msg.GetLast() != 3 {
		t.Fatalf("segment %v, want [1,3]", res.Msg)
	}
	if slow.Load() != 1 {
		t.Fatalf("%d calls reached connect-go on the follower; want 1 (forwarded)", slow.Load())
	}
}
