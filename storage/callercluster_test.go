package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/routes/routestest"
)

// A write naming the member's own cluster, or none, is served; one naming
// another cluster is refused failed_precondition with both IDs, and
// nothing is proposed: through the leader, through a follower (which
// would otherwise forward it), and through the leader's HTTP/1.1 front.
func TestCallerClusterFence(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	createTestTag(t, leader)
	var own string
	poll.Until(t, 15*time.Second, "every member applied the cluster ID", func() bool {
		own = leader.store.fsm.ClusterID()
		for _, n := range c.nodes {
			if id := n.store.fsm.ClusterID(); id == "" || id != own {
				return false
			}
		}
		return true
	})
	const other = "another-cluster"
	maxID := func() int64 {
		t.Helper()
		tag, err := leader.patientClient().GetTag(context.Background(), connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "t"}))
		if err != nil {
			t.Fatal(err)
		}
		return tag.Msg.GetMaxId()
	}
	refused := func(t *testing.T, what string, err error) {
		t.Helper()
		if connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Fatalf("%s naming cluster %q: %v, want failed_precondition", what, other, err)
		}
		var ce *connect.Error
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message(), ErrCallerCluster.Error()+": ") ||
			!strings.Contains(ce.Message(), own) || !strings.Contains(ce.Message(), other) {
			t.Fatalf("%s naming cluster %q: %v, want %q first, naming both %s and %s", what, other, err, ErrCallerCluster, own, other)
		}
	}

	fl := c.followers(leader)[0]
	tb := leader.store.Routes()
	url, _, front := routestest.ServeH1(t, routestest.Mount(tb), tb.Front(1<<20, testLogger()))
	entries := []struct {
		name string
		cl   seqsvrv1connect.StoreServiceClient
	}{
		{"leader", leader.patientClient()},
		{"follower", fl.patientClient()},
		{"leader's HTTP/1.1 front", seqsvrv1connect.NewStoreServiceClient(routestest.H1Client(t), url)},
	}
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			for _, id := range []string{own, ""} {
				if _, err := e.cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 1, ClusterId: id})); err != nil {
					t.Fatalf("ReserveSegment naming cluster %q: %v", id, err)
				}
			}
			before := maxID()
			_, err := e.cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 1, ClusterId: other}))
			refused(t, "ReserveSegment", err)
			if after := maxID(); after != before {
				t.Fatalf("a refused ReserveSegment moved max_id from %d to %d", before, after)
			}
		})
	}
	if front.Stats().Served == 0 {
		t.Fatal("the leader's front served none of its calls: the fast path was not tested")
	}

	// The other writes an allocsvr sends, through the leader. Each
	// request is otherwise one the store would serve or refuse for
	// another reason.
	ctx, cl, now := context.Background(), leader.patientClient(), time.Now().UnixMilli()
	_, err := cl.RegisterWorker(ctx, connect.NewRequest(&seqsvrv1.RegisterWorkerRequest{NodeId: "w", NowMs: now, InstanceId: "i", ClusterId: other}))
	refused(t, "RegisterWorker", err)
	_, err = cl.RenewWorker(ctx, connect.NewRequest(&seqsvrv1.RenewWorkerRequest{NodeId: "w", NowMs: now, InstanceId: "i", ClusterId: other}))
	refused(t, "RenewWorker", err)
	_, err = cl.SeqHeartbeat(ctx, connect.NewRequest(&seqsvrv1.SeqHeartbeatRequest{NodeId: "w", InstanceId: "i", NowMs: now, ClusterId: other}))
	refused(t, "SeqHeartbeat", err)
	_, err = cl.RaiseSections(ctx, connect.NewRequest(&seqsvrv1.RaiseSectionsRequest{NodeId: "w", InstanceId: "i", Space: "s",
		Sections: []*seqsvrv1.SectionRaise{{Section: 0}}, ClusterId: other}))
	refused(t, "RaiseSections", err)
	if _, err := cl.RegisterWorker(ctx, connect.NewRequest(&seqsvrv1.RegisterWorkerRequest{NodeId: "w", NowMs: now, InstanceId: "i", ClusterId: own})); err != nil {
		t.Fatalf("RegisterWorker naming its own cluster: %v", err)
	}
}
