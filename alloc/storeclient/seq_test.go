package storeclient

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// The per-key sequence calls of the fake cluster: one space "s"; a raise
// from a node other than "a" is refused as a non-owner's.

func (n *fakeNode) SeqHeartbeat(_ context.Context, req *connect.Request[seqsvrv1.SeqHeartbeatRequest]) (*connect.Response[seqsvrv1.SeqHeartbeatResponse], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("SeqHeartbeat"); err != nil {
		return nil, err
	}
	return connect.NewResponse(&seqsvrv1.SeqHeartbeatResponse{LeaseTtlMs: 5000, Tables: []*seqsvrv1.RoutingTable{{Space: "s", RoutingVersion: 1}}}), nil
}

func (n *fakeNode) RaiseSections(_ context.Context, req *connect.Request[seqsvrv1.RaiseSectionsRequest]) (*connect.Response[seqsvrv1.RaiseSectionsResponse], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("RaiseSections"); err != nil {
		return nil, err
	}
	if req.Msg.GetNodeId() != "a" {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("not the owner of section 0"))
	}
	return connect.NewResponse(&seqsvrv1.RaiseSectionsResponse{Sections: []*seqsvrv1.SectionMax{{MaxSeq: 10}}}), nil
}

func (n *fakeNode) GetSpace(_ context.Context, req *connect.Request[seqsvrv1.GetSpaceRequest]) (*connect.Response[seqsvrv1.Space], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("GetSpace"); err != nil {
		return nil, err
	}
	if req.Msg.GetSpace() != "s" {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("space %q", req.Msg.GetSpace()))
	}
	return connect.NewResponse(&seqsvrv1.Space{Space: "s", KeyCount: 40}), nil
}

func (n *fakeNode) GetRouting(_ context.Context, req *connect.Request[seqsvrv1.GetRoutingRequest]) (*connect.Response[seqsvrv1.RoutingTable], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("GetRouting"); err != nil {
		return nil, err
	}
	return connect.NewResponse(&seqsvrv1.RoutingTable{Space: req.Msg.GetSpace(), RoutingVersion: 3}), nil
}

func TestClientSeqCalls(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 3)
	fc.setLeader(2)
	c := testClient(t, fc.urls())

	if res, err := c.SeqHeartbeat(ctx, &seqsvrv1.SeqHeartbeatRequest{NodeId: "a"}); err != nil || res.GetTables()[0].GetSpace() != "s" {
		t.Fatalf("heartbeat: %v %v", res, err)
	}
	if n := fc.count(0, "SeqHeartbeat") + fc.count(1, "SeqHeartbeat"); n != 0 {
		t.Fatalf("%d heartbeats sent to followers", n)
	}
	if res, err := c.RaiseSections(ctx, &seqsvrv1.RaiseSectionsRequest{NodeId: "a"}); err != nil || res.GetSections()[0].GetMaxSeq() != 10 {
		t.Fatalf("raise: %v %v", res, err)
	}
	_, err := c.RaiseSections(ctx, &seqsvrv1.RaiseSectionsRequest{NodeId: "b"})
	if !errors.Is(err, errs.FailedPrecondition) || fc.count(2, "RaiseSections") != 2 {
		t.Fatalf("non-owner raise: %v (retried: %d calls)", err, fc.count(2, "RaiseSections"))
	}
	if sp, err := c.GetSpace(ctx, "s"); err != nil || sp.GetKeyCount() != 40 {
		t.Fatalf("get space: %v %v", sp, err)
	}
	if _, err := c.GetSpace(ctx, "nope"); !errors.Is(err, errs.NotFound) {
		t.Fatalf("unknown space: %v", err)
	}
	if rt, err := c.GetRouting(ctx, "s"); err != nil || rt.GetRoutingVersion() != 3 {
		t.Fatalf("routing: %v %v", rt, err)
	}
}
