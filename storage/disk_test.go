package storage

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func openDisk(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 15*time.Second, "the member to lead", func() bool {
		return s.Raft().State() == raft.Leader && s.Ready(context.Background()) == nil
	})
	return s
}

// A member on real disk (raft-boltdb, file snapshots, TCP transport) keeps
// max_id, the idempotency record and worker IDs across close and reopen,
// both from the log and from a snapshot plus the log after it.
func TestDiskReopenKeepsState(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	cfg := testConfig("d1", freeAddr(t), "127.0.0.1:1")
	cfg.DataDir = dir
	cfg.Peers = []Peer{{ID: "d1", RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr}}
	ctx := context.Background()

	s := openDisk(t, cfg)
	if _, err := s.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "disk", Start: 1000, Step: 100}); err != nil {
		t.Fatal(err)
	}
	seg, err := s.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "disk", RequestId: "before-snap"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.registerWorker(ctx, &seqsvrv1.RegisterWorkerRequest{NodeId: "a1", InstanceId: "i", NowMs: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "disk"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// Reopen with a different peers list: it must be ignored.
	cfg.Peers = []Peer{{ID: "d1", RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr}, {ID: "ghost", RaftAddr: "127.0.0.1:2", HTTPAddr: "127.0.0.1:3"}}
	s = openDisk(t, cfg)
	defer s.Close()
	tag, err := s.getTag(ctx, &seqsvrv1.GetTagRequest{Tag: "disk"})
	if err != nil || tag.GetMaxId() != 1400 {
		t.Fatalf("after reopen: %v %v (want max_id 1400)", tag, err)
	}
	again, err := s.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "disk", RequestId: "before-snap"})
	if err != nil || again.GetFirst() != seg.GetFirst() || again.GetLast() != seg.GetLast() {
		t.Fatalf("idempotent retry after reopen: %v %v, want %v", again, err, seg)
	}
	w2, err := s.registerWorker(ctx, &seqsvrv1.RegisterWorkerRequest{NodeId: "a1", InstanceId: "i", NowMs: time.Now().UnixMilli()})
	if err != nil || w2.GetWorkerId() != w.GetWorkerId() {
		t.Fatalf("worker after reopen: %v %v", w2, err)
	}
	if n := len(s.Raft().GetConfiguration().Configuration().Servers); n != 1 {
		t.Fatalf("peers list applied on restart: %d servers", n)
	}
}
