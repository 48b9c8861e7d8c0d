package launch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// TestRealCluster builds the real binaries and drives a 3-store,
// 1-allocsvr cluster through a leader kill and restart.
func TestRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	if err := Build(ctx, bin); err != nil { // cached
		t.Fatal(err)
	}
	c, err := Start(ctx, Options{BinDir: bin, Dir: dir, Stores: 3, Allocs: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.StoreClient(c.Stores[0])
	if _, err := sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil {
		t.Fatal(err)
	}
	seg, err := sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t"}))
	if err != nil {
		t.Fatal(err)
	}
	if seg.Msg.GetFirst() != 1 || seg.Msg.GetLast() != 10 {
		t.Fatalf("first segment %v", seg.Msg)
	}
	ids, err := c.AllocClient(c.Allocs[0]).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "t", Count: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids.Msg.GetIds()) != 3 || ids.Msg.GetIds()[0] <= 10 {
		t.Fatalf("allocsvr ids %v overlap the reserved segment", ids.Msg.GetIds())
	}

	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatal("killed store still reported as leader")
	}
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, leader); err != nil {
		t.Fatal(err)
	}
	tag, err := c.StoreClient(leader).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "t"}))
	if err != nil {
		t.Fatal(err)
	}
	if tag.Msg.GetMaxId() < 10 {
		t.Fatalf("max_id %d after restart", tag.Msg.GetMaxId())
	}
}
