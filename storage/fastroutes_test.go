package storage

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/connectfast/connectfasttest"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// frontServer serves n's store as the storesvr does: the HTTP/1.1 front
// with FastRoutes, and behind it net/http with connect-go, counted. It
// returns a binary-proto client on its own HTTP/1.1 connections (what the
// front serves) and the URL.
func frontServer(t *testing.T, n *testNode) (seqsvrv1connect.StoreServiceClient, string, *atomic.Int64, *h1.Server) {
	_, h := seqsvrv1connect.NewStoreServiceHandler(n.store.Service())
	url, slow, front := connectfasttest.ServeH1(t, h, n.store.FastRoutes(1<<20, testLogger()))
	return seqsvrv1connect.NewStoreServiceClient(connectfasttest.H1Client(t), url), url, slow, front
}

// createTestTag makes tag t (step 10) through the leader.
func createTestTag(t *testing.T, leader *testNode) {
	t.Helper()
	if _, err := leader.client().CreateTag(context.Background(), connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil {
		t.Fatal(err)
	}
}

func TestFastRoutesReserveOnLeader(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader()
	createTestTag(t, leader)
	cl, url, slow, front := frontServer(t, leader)
	ctx := context.Background()

	dctx, cancel := context.WithTimeout(ctx, 1<<40)
	defer cancel()
	var last int64
	// With and without a deadline (Connect-Timeout-Ms), both fast.
	for i, ctx := range []context.Context{ctx, dctx, ctx} {
		res, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 5}))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
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

	// Rejections are connect-go's, code and message, and change nothing.
	before := stateOnly(leader.store.fsm.State())
	cases := map[string]*seqsvrv1.ReserveSegmentRequest{
		"unknown tag":   {Tag: "nope"},
		"bad tag":       {Tag: "a/b"},
		"negative size": {Tag: "t", Size: -1},
		"empty":         {},
	}
	for name, req := range cases {
		_, ferr := cl.ReserveSegment(ctx, connect.NewRequest(req))
		_, rerr := leader.client().ReserveSegment(ctx, connect.NewRequest(req))
		var fce, rce *connect.Error
		if !errors.As(ferr, &fce) || !errors.As(rerr, &rce) {
			t.Fatalf("%s: front %v, net/http %v; want errors", name, ferr, rerr)
		}
		if fce.Code() != rce.Code() || fce.Message() != rce.Message() {
			t.Fatalf("%s: front %v %q; net/http %v %q", name, fce.Code(), fce.Message(), rce.Code(), rce.Message())
		}
	}
	if got := stateOnly(leader.store.fsm.State()); !proto.Equal(got, before) {
		t.Fatal("a rejected reservation changed the state")
	}

	// A malformed body is invalid_argument (HTTP 400), answered by the front.
	req, _ := http.NewRequest(http.MethodPost, url+seqsvrv1connect.StoreServiceReserveSegmentProcedure, bytes.NewReader([]byte{0x0a, 0x09, 't'}))
	req.Header.Set("Content-Type", "application/proto")
	res, err := connectfasttest.H1Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("truncated body: status %d, want 400", res.StatusCode)
	}

	st := front.Stats()
	if want := uint64(3 + 2 + len(cases) + 1); st.Served != want || slow.Load() != 0 {
		t.Fatalf("front served %d, net/http %d; want %d on the front", st.Served, slow.Load(), want)
	}
	for reason, n := range st.HandOffs {
		if n != 0 {
			t.Fatalf("%d connections handed off for %s; want none", n, reason)
		}
	}

	// Other codecs and other RPCs go to connect-go behind the front.
	js := seqsvrv1connect.NewStoreServiceClient(connectfasttest.H1Client(t), url, connect.WithProtoJSON())
	if _, err := js.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t"})); err != nil {
		t.Fatal(err)
	}
	if _, err := seqsvrv1connect.NewStoreServiceClient(connectfasttest.H1Client(t), url).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "t"})); err != nil {
		t.Fatal(err)
	}
	if got := slow.Load(); got != 2 {
		t.Fatalf("%d calls reached connect-go, want the JSON one and GetTag", got)
	}
}

// A follower's front declines before proposing anything: the connection
// goes to net/http, whose handlers forward the call to the leader, and it
// stays there.
func TestFastRoutesReserveOnFollowerHandsOff(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	createTestTag(t, leader)
	cl, _, slow, front := frontServer(t, c.followers(leader)[0])
	for i, want := range [][2]int64{{1, 3}, {4, 6}} {
		res, err := cl.ReserveSegment(context.Background(), connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 3}))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if res.Msg.GetFirst() != want[0] || res.Msg.GetLast() != want[1] {
			t.Fatalf("call %d: segment %v, want %v", i, res.Msg, want)
		}
	}
	if st := front.Stats(); st.Served != 0 || st.HandOffs["declined"] != 1 || slow.Load() != 2 {
		t.Fatalf("front served %d, declined %d connections, net/http got %d; want 0, 1, 2",
			st.Served, st.HandOffs["declined"], slow.Load())
	}
}
