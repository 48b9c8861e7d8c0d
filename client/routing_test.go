package client_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/client"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// forwards sums the per-key calls the allocsvrs forwarded to an owner.
func forwards(t *testing.T, c *launch.Cluster, allocs []*launch.Proc) uint64 {
	t.Helper()
	var n uint64
	for _, a := range allocs {
		if !a.Running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := c.AllocClient(a).Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		n += res.Msg.GetSeq().GetForwards()
	}
	return n
}

// Per-key calls go straight to each section's owner once the client has
// the routing table; when sections move (an allocsvr joins, another
// stops) an answer's newer routing_version refreshes the table and the
// calls follow the new owners, with no error and every key's values
// increasing throughout.
func TestRoutingRefresh(t *testing.T) {
	c := sharedCluster(t)
	const space = "routing"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := c.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: space, KeyCount: 1000, SectionSize: 100, Step: 100}); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t)
	keys := make([]uint64, 20)
	for i := range keys {
		keys[i] = uint64(i * 50) // two keys in each of the 10 sections
	}
	waitSpace(ctx, t, cl, space, keys)
	last := make([]int64, len(keys))
	call := func() {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		seqs, err := cl.NextSeqs(cctx, space, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			if s <= last[i] {
				t.Fatalf("key %d: %d after %d", keys[i], s, last[i])
			}
			last[i] = s
		}
	}
	allocs := append([]*launch.Proc{}, c.Allocs...)
	// settled: calls until the client's table is current and a round of
	// calls makes the allocsvrs forward nothing.
	settled := func(what string, minVersion uint64) uint64 {
		t.Helper()
		for {
			if ctx.Err() != nil {
				t.Fatalf("%s: the client never routed every key straight to its owner (version %d)", what, cl.RoutingVersion(space))
			}
			call()
			v := cl.RoutingVersion(space)
			if v < minVersion {
				continue
			}
			before := forwards(t, c, allocs)
			for range 5 {
				call()
			}
			if forwards(t, c, allocs) == before && cl.RoutingVersion(space) == v {
				return v
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	v1 := settled("start", 1)

	extra, err := c.NewAlloc("a3", "a3")
	if err != nil {
		t.Fatal(err)
	}
	restart(t, c, extra)
	allocs = append(allocs, extra)
	v2 := settled("after a3 joined", v1+1)

	if err := extra.Stop(); err != nil { // SIGTERM: its sections move at once
		t.Fatal(err)
	}
	c.DropAlloc(extra)
	v3 := settled("after a3 stopped", v2+1)
	t.Logf("routing versions %d -> %d (a3 joined) -> %d (a3 stopped); keys at %v", v1, v2, v3, last)
}

// waitSpace waits until the allocsvrs know a space just created (each
// learns it from the store with its next heartbeat; until the owner of a
// key's section has, a call for the key answers not_found even through
// an allocsvr that knows the space).
func waitSpace(ctx context.Context, t *testing.T, cl *client.Client, space string, keys []uint64) {
	t.Helper()
	for {
		_, err := cl.CurrentSeqs(ctx, space, keys)
		if err == nil {
			return
		}
		if client.Code(err) != connect.CodeNotFound || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
