package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// A member whose data dir (a small tmpfs) fills: a snapshot fails without
// harming it, writes are refused with ErrDiskFull naming raft.db and Ready
// says so; once space is back, writes and snapshots succeed again in the
// same process, and after a reopen max_id covers every acknowledged
// segment.
func TestDiskFullSnapshotAndWrites(t *testing.T) {
	skipShort(t)
	dir := filepath.Join(t.TempDir(), "data")
	launchtest.Tmpfs(t, dir, 8<<20)
	cfg := testConfig("f1", freeAddr(t), "127.0.0.1:1")
	cfg.DataDir = dir
	cfg.Peers = []Peer{{ID: "f1", RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr}}
	ctx := context.Background()
	s := openDisk(t, cfg)
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	if _, err := s.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "f", Step: 10}); err != nil {
		t.Fatal(err)
	}
	var maxAcked int64
	reserve := func() error {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		seg, err := s.reserveSegment(c, &seqsvrv1.ReserveSegmentRequest{Tag: "f"})
		if err == nil {
			maxAcked = max(maxAcked, seg.GetLast())
		}
		return err
	}
	for i := 0; i < 5; i++ {
		if err := reserve(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := launch.Fill(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Raft().Snapshot().Error(); err == nil {
		t.Fatal("a snapshot succeeded on a full disk")
	} else {
		t.Logf("snapshot on a full disk: %v", err)
	}
	var refused error
	poll.Until(t, 30*time.Second, "a write refused for the full disk", func() bool {
		refused = reserve()
		return errors.Is(refused, ErrDiskFull)
	})
	if !strings.Contains(refused.Error(), filepath.Join(dir, "raft.db")) {
		t.Fatalf("refusal %q does not name raft.db", refused)
	}
	if err := s.Ready(ctx); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Ready on a full disk = %v", err)
	}
	if err := reserve(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("second write on a full disk = %v, want ErrDiskFull", err)
	}

	if err := launch.Unfill(dir); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "writes to succeed again", func() bool { return reserve() == nil })
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot after space came back: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("the failed snapshot left %s", e.Name())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	s = openDisk(t, cfg)
	closed = false
	tag, err := s.getTag(ctx, &seqsvrv1.GetTagRequest{Tag: "f"})
	if err != nil || tag.GetMaxId() < maxAcked {
		t.Fatalf("after reopen: %v %v, want max_id >= %d", tag, err, maxAcked)
	}
}
