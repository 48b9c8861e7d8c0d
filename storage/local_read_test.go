package storage

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// GetTag with local=true answers from the member asked, even one cut off
// from the leader, and is never forwarded: a lagging follower shows its
// own (stale) max_id while the leader shows the new one.
func TestGetTagLocal(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	lc := leader.client()
	if _, err := lc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "l", Step: 10})); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "l"})); err != nil {
		t.Fatal(err)
	}
	f := c.followers(leader)[0]
	local := func(n *testNode, tag string) (int64, error) {
		resp, err := n.client().GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: tag, Local: true}))
		if err != nil {
			return 0, err
		}
		return resp.Msg.GetMaxId(), nil
	}
	poll.Until(t, 10*time.Second, "follower applies the first segment", func() bool {
		v, err := local(f, "l")
		return err == nil && v == 10
	})

	// Cut the follower off the Raft traffic; the other two go on.
	f.trans.DisconnectAll()
	for _, n := range c.nodes {
		if n != f {
			n.trans.Disconnect(f.addr)
		}
	}
	// A leader change on a loaded machine may answer unavailable; the
	// request_id makes the retry take the same segment.
	if err := answered(t, func() error {
		_, err := lc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "l", RequestId: "second"}))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the leader applies the second segment", func() bool {
		v, err := local(leader, "l")
		return err == nil && v == 20
	})
	if v, err := local(leader, "l"); err != nil || v != 20 {
		t.Fatalf("leader local read: %d %v, want 20", v, err)
	}
	if v, err := local(f, "l"); err != nil || v != 10 {
		t.Fatalf("cut-off follower local read: %d %v, want its own stale 10", v, err)
	}
	if _, err := local(f, "missing"); connectCode(err) != "not_found" {
		t.Fatalf("local read of a missing tag: %v", err)
	}
	if _, err := local(f, "a/b"); connectCode(err) != "invalid_argument" {
		t.Fatalf("local read of a bad tag: %v", err)
	}

	// Healed, the follower catches up and its own state shows it.
	connectAll(c.nodes)
	poll.Until(t, 10*time.Second, "follower catches up", func() bool {
		v, err := local(f, "l")
		return err == nil && v == 20
	})
}
