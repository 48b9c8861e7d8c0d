package storage

import (
	"context"
	"errors"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Recover rewrites a member's own data (snapshot plus the log after it)
// into a one-member cluster with prepare's state; Seed writes a given
// state into an empty data dir. Both are in force when the member starts,
// and both are harmless to repeat.
func TestRecoverAndSeed(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	cfg := testConfig("d1", freeAddr(t), "127.0.0.1:1")
	cfg.DataDir = t.TempDir()
	cfg.Peers = []Peer{{ID: "d1", RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr}, {ID: "gone", RaftAddr: "127.0.0.1:2", HTTPAddr: "127.0.0.1:3"}}
	// Two voters, one gone for good: d1 alone has no quorum, so it
	// cannot even lead. Bootstrap it alone first, add the ghost later.
	cfg.Peers = cfg.Peers[:1]
	s := openDisk(t, cfg)
	if _, err := s.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "t", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	seg, err := s.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Raft().AddVoter("gone", "127.0.0.1:2", 0, 0).Error(); err != nil {
		t.Fatal(err)
	}
	old := s.fsm.State()
	s.Close()

	prepare := func(cur *seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error) {
		if len(cur.GetTags()) != 1 || cur.GetTags()[0].GetMaxId() != seg.GetLast() {
			t.Errorf("recovery replayed %v, want t at %d (the entry after the snapshot too)", cur.GetTags(), seg.GetLast())
		}
		cur.ClusterId = "recovered"
		cur.Tags[0].MaxId += 1000
		return cur, nil
	}
	cfg.Peers = nil
	// A refused recovery (prepare fails) leaves the data dir as it was:
	// the next one still replays everything.
	if err := Recover(cfg, func(*seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error) { return nil, ErrRewrite }); !errors.Is(err, ErrRewrite) {
		t.Fatalf("refused recovery: %v, want ErrRewrite", err)
	}
	if err := Recover(cfg, prepare); err != nil {
		t.Fatal(err)
	}
	s = openDisk(t, cfg)
	if n := len(s.Raft().GetConfiguration().Configuration().Servers); n != 1 || s.fsm.ClusterID() != "recovered" {
		t.Fatalf("after recovery: %d servers, cluster %q", n, s.fsm.ClusterID())
	}
	next, err := s.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "t"})
	if err != nil || next.GetFirst() != seg.GetLast()+1001 {
		t.Fatalf("after recovery: %v %v, want first %d", next, err, seg.GetLast()+1001)
	}
	s.Close()
	if err := Recover(cfg, prepare); !errors.Is(err, ErrDone) {
		t.Fatalf("second recovery: %v, want ErrDone", err)
	}

	// Seed: an empty dir takes the state as it is.
	seedCfg := testConfig("r1", freeAddr(t), "127.0.0.1:4")
	seedCfg.DataDir = t.TempDir()
	old.ClusterId = "seeded"
	old.Tags[0].MaxId = 5000
	if err := Seed(seedCfg, old, "sum1"); err != nil {
		t.Fatal(err)
	}
	if err := Seed(seedCfg, old, "sum1"); !errors.Is(err, ErrDone) {
		t.Fatalf("same backup again: %v, want ErrDone", err)
	}
	if err := Seed(seedCfg, old, "sum2"); !errors.Is(err, ErrRewrite) {
		t.Fatalf("another backup into a used dir: %v, want ErrRewrite", err)
	}
	s = openDisk(t, seedCfg)
	defer s.Close()
	tag, err := s.getTag(ctx, &seqsvrv1.GetTagRequest{Tag: "t"})
	if err != nil || tag.GetMaxId() != 5000 || s.fsm.ClusterID() != "seeded" {
		t.Fatalf("seeded: %v %v cluster %q", tag, err, s.fsm.ClusterID())
	}
}
