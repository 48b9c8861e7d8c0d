package storage

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// isolate cuts n's Raft links to every other member (both ways); its
// HTTP server still answers.
func isolate(c *testCluster, n *testNode) {
	for _, o := range c.nodes {
		if o != n {
			o.trans.Disconnect(n.addr)
			n.trans.Disconnect(o.addr)
		}
	}
}

// Handover gives leadership to the voter that has applied the most, not
// to one that answers but lags (cut off from Raft here), and returns once
// the old leader knows the new one: the next term's leader.
func TestHandoverPicksTheFurthestVoter(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := leader.patientClient()
	if _, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "h", Step: 1})); err != nil {
		t.Fatal(err)
	}
	f := c.followers(leader)
	behind, ahead := f[0], f[1]
	isolate(c, behind)
	for range 20 {
		if _, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "h"})); err != nil {
			t.Fatal(err)
		}
	}
	term := leader.store.raft.CurrentTerm()

	leader.store.Handover(ctx)

	if _, id := leader.store.raft.LeaderWithID(); string(id) != ahead.id {
		t.Fatalf("after Handover the old leader names %q as leader, want %s (the furthest voter; %s lags)", id, ahead.id, behind.id)
	}
	if st, got := ahead.store.raft.State(), ahead.store.raft.CurrentTerm(); st != raft.Leader || got != term+1 {
		t.Fatalf("%s: %v in term %d, want leader in term %d", ahead.id, st, got, term+1)
	}
}

// Calls that reach the leader while it hands leadership over are held and
// then forwarded to the new leader, never refused; so are calls a
// follower forwarded to it. The callers here do not retry, and all call
// the first leader, which leads again or forwards as leadership moves
// round the members.
func TestHandoverRefusesNoCall(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	first := c.waitForLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := first.patientClient().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "h", Step: 1})); err != nil {
		t.Fatal(err)
	}
	cl := first.client()
	var (
		stop     atomic.Bool
		served   atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "h"}))
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					continue
				}
				served.Add(1)
			}
		}()
	}
	for range 10 {
		want := served.Load() + 50
		poll.Until(t, 20*time.Second, "50 more reservations", func() bool { return served.Load() >= want })
		leader := c.waitForLeader()
		leader.store.Handover(ctx)
		if leader.store.raft.State() == raft.Leader {
			t.Fatalf("%s still leads after Handover", leader.id)
		}
	}
	want := served.Load() + 50
	poll.Until(t, 20*time.Second, "50 more reservations", func() bool { return served.Load() >= want })
	stop.Store(true)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d calls refused around the handovers, first: %v", len(failures), failures[0])
	}
}

// A one-member cluster has no one to hand over to: Handover returns at
// once, without a failed transfer in the log.
func TestHandoverAlone(t *testing.T) {
	var logs syncBuffer
	c := newTestCluster(t, 1, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	n := c.waitForLeader()
	n.store.Handover(context.Background())
	if n.store.raft.State() != raft.Leader {
		t.Fatal("a one-member cluster lost its leader")
	}
	if l := logs.String(); strings.Contains(l, "handing leadership over") || strings.Contains(l, "transfer failed") {
		t.Fatalf("a one-member cluster tried a transfer:\n%s", l)
	}
}

// syncBuffer is a bytes.Buffer for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
