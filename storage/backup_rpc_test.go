package storage

import (
	"bytes"
	"context"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/storage/backup"
)

func fetchBackup(t *testing.T, c seqsvrv1connect.StoreServiceClient) *seqsvrv1.Backup {
	t.Helper()
	stream, err := c.Backup(context.Background(), connect.NewRequest(&seqsvrv1.BackupRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var buf bytes.Buffer
	for stream.Receive() {
		buf.Write(stream.Msg().GetData())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := backup.Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A backup holds every write answered before it began, from the leader or
// relayed by a follower, with the cluster ID, index, leader and limits.
func TestBackupRPC(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	id := waitClusterID(t, leader)
	ctx := context.Background()
	cl := leader.client()
	if _, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "order", Step: 10})); err != nil {
		t.Fatal(err)
	}
	seg, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "order", RequestId: "r1"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []*testNode{leader, c.followers(leader)[0]} {
		b := fetchBackup(t, from.client())
		tags := b.GetState().GetTags()
		if len(tags) != 1 || tags[0].GetMaxId() != seg.Msg.GetLast() || tags[0].GetRate().GetPeakPerSec() < 1 {
			t.Fatalf("from %s: tags %v, want order at %d with a rate", from.id, tags, seg.Msg.GetLast())
		}
		if b.GetClusterId() != id || b.GetLeaderId() != leader.id || b.GetRaftIndex() == 0 || b.GetMaxSegmentSize() != DefaultMaxSegmentSize {
			t.Fatalf("from %s: backup header %v", from.id, b)
		}
		if len(b.GetState().GetRequests()) != 0 {
			t.Fatalf("the request record is in the backup")
		}
	}
}
