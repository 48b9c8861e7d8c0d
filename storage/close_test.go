package storage

import (
	"context"
	"sync"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Close returns while writes are being proposed: hashicorp/raft v1.7.3
// never answers an Apply still queued in its batched apply channel (or
// its FSM queue) when it shuts down, and a leader loop or handler waiting
// on one held Close for ever (seen in a -race -count=3 run: 20 minutes).
func TestCloseDuringProposals(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	for round := range 8 {
		cfg := testConfig("c1", freeAddr(t), "127.0.0.1:1")
		cfg.DataDir = t.TempDir()
		cfg.Peers = []Peer{{ID: "c1", RaftAddr: cfg.RaftAddr, HTTPAddr: cfg.HTTPAddr}}
		s := openDisk(t, cfg)
		if _, err := s.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "t", Step: 1}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, err := s.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "t"}); err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case <-closed:
		case <-time.After(15 * time.Second):
			t.Fatalf("round %d: Close did not return in 15 s", round)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("round %d: proposals still waiting 15 s after Close", round)
		}
	}
}
