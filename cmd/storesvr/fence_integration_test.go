package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// An allocsvr given the members of both the lost cluster and the cluster
// restored from its backup follows the restored one (its generation is
// higher), and never takes a segment from the old members when they come
// back with their data: not while the restored cluster serves, not once
// it is down and the allocsvr's buffers run dry, and not after the
// allocsvr restarts (it remembers the restored cluster in its data dir).
func TestAllocsvrFencesOldClusterAfterRestore(t *testing.T) {
	launchtest.SkipShort(t)
	ctx := launchtest.Context(t, 4*time.Minute)
	old, lost := startLost(ctx, t)
	file := filepath.Join(t.TempDir(), "seqsvr.backup")
	b := takeBackup(ctx, t, old, old.Stores[1], file)
	if b.GetGeneration() != 0 {
		t.Fatalf("a cluster bootstrapped fresh has generation %d, want 0", b.GetGeneration())
	}
	use(ctx, t, old, lost, 5)
	for _, p := range old.All() {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}

	c := layout(t)
	s1, a := c.Stores[0], c.Allocs[0]
	s1.Peers = ""
	s1.ExtraArgs = append(s1.ExtraArgs, "--restore", file)
	// Old members first: the first to answer must not win. Small
	// segments and short waits, so that the buffers run dry quickly once
	// the restored cluster is gone.
	a.Stores = append(old.StoreURLs(), c.StoreURLs()...)
	a.ExtraArgs = append(a.ExtraArgs, "--max-step", "200", "--empty-wait", "200ms", "--load-timeout", "1s")
	startJoined(ctx, t, c)
	st, err := c.Status(ctx, s1)
	if err != nil || st.GetClusterId() == lost.clusterID || st.GetGeneration() <= 0 {
		t.Fatalf("restored cluster: %v %v, want a new cluster ID and a generation above 0", st, err)
	}
	alloc := c.AllocClient(a)
	allocStatus := func() *seqsvrv1.StatusResponse {
		res, err := alloc.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
		if err != nil {
			return nil
		}
		return res.Msg
	}
	poll.UntilCtx(ctx, t, "the allocsvr to follow the restored cluster", func() bool {
		s := allocStatus()
		return s.GetClusterId() == st.GetClusterId() && s.GetClusterGeneration() == st.GetGeneration()
	})
	next := func() ([]int64, error) {
		res, err := alloc.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: 100}))
		if err != nil {
			return nil, err
		}
		return res.Msg.GetIds(), nil
	}
	var ids []int64
	if err := errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) (err error) { ids, err = next(); return err }); err != nil {
		t.Fatal(err)
	}
	first := ids[0]
	if first <= lost.maxID {
		t.Fatalf("first ID %d of the restored cluster, the lost one handed out up to %d", first, lost.maxID)
	}

	// The old members come back with their data and elect a leader.
	for _, s := range old.Stores {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range old.Stores {
		if err := old.WaitReady(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	oldMax := func() int64 {
		var tag *connect.Response[seqsvrv1.Tag]
		if err := errs.Retry(ctx, launchtest.Retry(errs.StoreCall), func(context.Context, int) (err error) {
			tag, err = old.StoreClient(old.Stores[0]).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "order"}))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return tag.Msg.GetMaxId()
	}
	before := oldMax()
	poll.UntilCtx(ctx, t, "the allocsvr to report the old members as fenced", func() bool {
		return len(allocStatus().GetFencedStores()) == len(old.Stores) &&
			strings.Contains(metricsOf(ctx, t, c, a), "seqsvr_alloc_store_fenced_members 3\n")
	})

	// The restored cluster goes down: the allocsvr serves what it holds,
	// then answers unavailable rather than take from the old cluster.
	for _, s := range c.Stores {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	// Dry means ten refusals in a row (each after --empty-wait), so that
	// a reservation still under way has its chance to be served.
	last, refusals := ids[len(ids)-1], 0
	for i := 0; i < 500 && refusals < 10; i++ {
		ids, err := next()
		if err != nil {
			if connect.CodeOf(err) != connect.CodeUnavailable {
				t.Fatalf("with only the old cluster up: %v, want unavailable", err)
			}
			refusals++
			continue
		}
		refusals = 0
		if ids[0] <= last {
			t.Fatalf("ID %d after %d: served from the old cluster", ids[0], last)
		}
		last = ids[len(ids)-1]
	}
	if refusals < 10 {
		t.Fatal("the buffers never ran dry with the restored cluster down: the allocsvr reserves somewhere")
	}
	if after := oldMax(); after != before {
		t.Fatalf("the old cluster's max_id moved from %d to %d: the allocsvr reserved from it", before, after)
	}

	// Restarted on its data dir, it still refuses the old cluster.
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, "the restarted allocsvr to fence the old members", func() bool {
		return strings.Contains(metricsOf(ctx, t, c, a), "seqsvr_alloc_store_fenced_members 3\n")
	})
	for range 5 {
		if ids, err := next(); err == nil {
			t.Fatalf("the restarted allocsvr served %v with only the old cluster up", ids)
		}
	}
	if after := oldMax(); after != before {
		t.Fatalf("the old cluster's max_id moved from %d to %d: the allocsvr reserved from it", before, after)
	}
	log, _ := os.ReadFile(a.LogPath)
	if !strings.Contains(string(log), "answers as another cluster of a generation not above the followed one") {
		t.Fatalf("no fence logged in %s", a.LogPath)
	}
}
