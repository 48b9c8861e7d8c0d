package storage

import (
	"context"
	"errors"
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
// with FastRoutes, and behind it net/http with connect-go, counted.
func frontServer(t *testing.T, n *testNode) (seqsvrv1connect.StoreServiceClient, *atomic.Int64, *h1.Server) {
	_, h := seqsvrv1connect.NewStoreServiceHandler(n.store.Service())
	url, slow, front := connectfasttest.ServeH1(t, h, n.store.FastRoutes(1<<20, testLogger()))
	return seqsvrv1connect.NewStoreServiceClient(connectfasttest.H1Client(t), url), slow, front
}

func TestFastRoutesReserveOnLeader(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.client().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil {
		t.Fatal(err)
	}
	cl, slow, front := frontServer(t, leader)

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

	// Rejections are connect-go's, code and message, and change nothing.
	before := stateOf(leader.store.fsm)
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
	if got := stateOf(leader.store.fsm); !proto.Equal(got, before) {
		t.Fatal("a rejected reservation changed the state")
	}

	st := front.Stats()
	if want := uint64(3 + len(cases)); st.Served != want || slow.Load() != 0 {
		t.Fatalf("front served %d, net/http %d; want %d on the front", st.Served, slow.Load(), want)
	}
	for reason, n := range st.HandOffs {
		if n != 0 {
			t.Fatalf("%d connections handed off for %s; want none", n, reason)
		}
	}
}

// A follower's front declines: the connection goes to net/http, whose
// handlers forward the call to the leader, and it stays there.
func TestFastRoutesReserveOnFollowerHandsOff(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.client().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil {
		t.Fatal(err)
	}
	cl, slow, front := frontServer(t, c.followers(leader)[0])
	for i, want := range [][2]int64{{1, 3}, {4, 6}} {
		res, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 3}))
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
