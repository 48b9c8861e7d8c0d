package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// tmpfsStores lays out a cluster of n storesvrs whose data dirs are small
// tmpfs mounts, and launches it; the cluster is killed before the mounts
// go.
func tmpfsStores(t *testing.T, ctx context.Context, n int) *launch.Cluster {
	t.Helper()
	launchtest.SkipShort(t)
	c, err := launch.New(launch.Options{BinDir: launchtest.BinDir(t), Dir: t.TempDir(), Stores: n, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Stores {
		launchtest.Tmpfs(t, s.DataDir, 8<<20)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, p := range c.All() {
				if b, err := os.ReadFile(p.LogPath); err == nil {
					t.Logf("---- %s log (tail) ----\n%s", p.Name, b[max(0, len(b)-4000):])
				}
			}
		}
	})
	if err := c.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// reserveLoad reserves segments of tag through store from a few
// goroutines until stop, each call with its own request_id (prefixed by
// name) and a short
// deadline, and records every acknowledged segment.
type reserveLoad struct {
	mu    sync.Mutex
	acked []*seqsvrv1.Segment
	n     atomic.Int64
	wg    sync.WaitGroup
}

func startLoad(ctx context.Context, cl interface {
	ReserveSegment(context.Context, *connect.Request[seqsvrv1.ReserveSegmentRequest]) (*connect.Response[seqsvrv1.Segment], error)
}, tag, name string, workers int) *reserveLoad {
	l := &reserveLoad{}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				r, err := cl.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: tag, RequestId: fmt.Sprintf("%s-w%d-%d", name, w, i)}))
				cancel()
				if err == nil {
					l.mu.Lock()
					l.acked = append(l.acked, r.Msg)
					l.mu.Unlock()
				} else {
					time.Sleep(20 * time.Millisecond)
				}
				l.n.Add(1)
			}
		}()
	}
	return l
}

// A storesvr whose data dir fills refuses writes with unavailable naming
// the path, says so in its log and /readyz, acknowledges nothing it did not
// write, and serves again once space is back, without a restart; every
// segment it acknowledged is below max_id after a SIGKILL and restart.
func TestDiskFullRefusesThenHeals(t *testing.T) {
	ctx := launchtest.Context(t, 3*time.Minute)
	c := tmpfsStores(t, ctx, 1)
	s := c.Stores[0]
	createTag(t, c, s, "full", 10)
	cl := c.StoreClient(s)
	loadCtx, stopLoad := context.WithCancel(ctx)
	load := startLoad(loadCtx, cl, "full", "a", 4)

	poll.UntilCtx(ctx, t, "the load to run", func() bool { return load.n.Load() > 20 })
	if _, n, err := launch.Fill(s.DataDir); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("filled %s with %d bytes", s.DataDir, n)
	}
	// Bolt reuses the free pages it has, so some writes still succeed
	// (and are durable); then the member refuses, naming the path, and
	// keeps refusing the same way while the disk stays full.
	refusals, others := 0, 0
	fullCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	poll.UntilCtx(fullCtx, t, "three refusals naming the data dir", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cl.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "full"}))
		switch {
		case err == nil:
			refusals = 0
		case connect.CodeOf(err) == connect.CodeUnavailable && strings.Contains(err.Error(), "data dir is full") && strings.Contains(err.Error(), s.DataDir):
			refusals++
		default:
			if others++; others <= 5 {
				t.Logf("refused otherwise: %v", err)
			}
			refusals = 0
		}
		time.Sleep(50 * time.Millisecond)
		return refusals >= 3
	})
	if b, _ := os.ReadFile(s.LogPath); !strings.Contains(string(b), "data dir is full") || !strings.Contains(string(b), s.DataDir) {
		t.Fatalf("log does not say the data dir %s is full", s.DataDir)
	}
	// The guard's probe write may find a free page and clear the state
	// until the next append fails again (seen under load), so the metric
	// and /readyz are polled for the refusing state, not read once.
	poll.UntilCtx(fullCtx, t, "seqsvr_store_data_dir_writable 0 while full", func() bool {
		v, ok := launchtest.Metric(t, s.URL(), "seqsvr_store_data_dir_writable")
		return ok && v == 0
	})
	poll.UntilCtx(fullCtx, t, "/readyz not 200 while full", func() bool {
		resp, err := http.Get(s.URL() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode != http.StatusOK
	})

	if err := launch.Unfill(s.DataDir); err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	poll.UntilCtx(ctx, t, "a write to succeed after space came back", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cl.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "full"}))
		return err == nil
	})
	if s.Pid() != pid || s.Starts() != 1 {
		t.Fatalf("the storesvr restarted (pid %d -> %d, starts %d)", pid, s.Pid(), s.Starts())
	}
	if v, ok := launchtest.Metric(t, s.URL(), "seqsvr_store_data_dir_writable"); !ok || v != 1 {
		t.Fatalf("seqsvr_store_data_dir_writable after space came back = %v (found %v), want 1", v, ok)
	}
	stopLoad()
	load.wg.Wait()

	// Durable: SIGKILL and restart; max_id covers every acknowledged
	// segment, and no two acknowledged segments overlap.
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, s); err != nil {
		t.Fatal(err)
	}
	var tag *seqsvrv1.Tag
	err := errs.Retry(ctx, launchtest.Retry(errs.StoreCall), func(context.Context, int) error {
		r, err := cl.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "full"}))
		if err == nil {
			tag = r.Msg
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	load.mu.Lock()
	defer load.mu.Unlock()
	checkAcked(t, load.acked, tag.GetMaxId())
	t.Logf("%d calls, %d acknowledged, max_id %d after restart", load.n.Load(), len(load.acked), tag.GetMaxId())
	if b, err := os.ReadFile(s.LogPath); err == nil {
		t.Logf("log: %d lines 'data dir is full', %d 'takes writes again'", strings.Count(string(b), "data dir is full"), strings.Count(string(b), "takes writes again"))
	}
}

// checkAcked fails the test if an acknowledged segment reaches above
// maxID or two overlap.
func checkAcked(t *testing.T, acked []*seqsvrv1.Segment, maxID int64) {
	t.Helper()
	seen := map[int64]bool{}
	for _, seg := range acked {
		if seg.GetLast() > maxID {
			t.Errorf("acknowledged segment %d..%d is above max_id %d after restart", seg.GetFirst(), seg.GetLast(), maxID)
		}
		if seen[seg.GetFirst()] {
			t.Errorf("segment starting at %d acknowledged twice", seg.GetFirst())
		}
		seen[seg.GetFirst()] = true
	}
}

// In a three-member cluster the leader's data dir fills: the others carry
// on (a write through them succeeds), the full member refuses writes naming
// its path, and once space is back it serves again without a restart;
// every acknowledged segment is below max_id after all three are killed
// and restarted.
func TestDiskFullLeaderOfThree(t *testing.T) {
	ctx := launchtest.Context(t, 3*time.Minute)
	c := tmpfsStores(t, ctx, 3)
	full, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	createTag(t, c, full, "three", 10)
	var others []*launch.Proc
	for _, s := range c.Stores {
		if s != full {
			others = append(others, s)
		}
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loads := []*reserveLoad{startLoad(loadCtx, c.StoreClient(others[0]), "three", "other", 2), startLoad(loadCtx, c.StoreClient(full), "three", "full", 2)}
	poll.UntilCtx(ctx, t, "the load to run", func() bool { return loads[0].n.Load() > 10 })
	if _, _, err := launch.Fill(full.DataDir); err != nil {
		t.Fatal(err)
	}
	cl := c.StoreClient(full)
	fullCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	poll.UntilCtx(fullCtx, t, "the full member to refuse naming its data dir", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cl.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "three"}))
		time.Sleep(50 * time.Millisecond)
		return connect.CodeOf(err) == connect.CodeUnavailable && strings.Contains(err.Error(), "data dir is full") && strings.Contains(err.Error(), full.DataDir)
	})
	// The two others still make a quorum and serve writes.
	before := loads[0].n.Load()
	okBefore := len(loads[0].snapshot())
	poll.UntilCtx(fullCtx, t, "writes through the others while one member is full", func() bool {
		return len(loads[0].snapshot()) > okBefore+5 && loads[0].n.Load() > before
	})

	if err := launch.Unfill(full.DataDir); err != nil {
		t.Fatal(err)
	}
	pid := full.Pid()
	poll.UntilCtx(ctx, t, "the member that was full to take writes again", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cl.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "three"}))
		return err == nil
	})
	if err := c.WaitReady(ctx, full); err != nil {
		t.Fatal(err)
	}
	if full.Pid() != pid || full.Starts() != 1 {
		t.Fatalf("the storesvr restarted (pid %d -> %d, starts %d)", pid, full.Pid(), full.Starts())
	}
	stopLoad()
	for _, l := range loads {
		l.wg.Wait()
	}
	for _, s := range c.Stores {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range c.Stores {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var tag *seqsvrv1.Tag
	err = errs.Retry(ctx, launchtest.Retry(errs.StoreCall), func(context.Context, int) error {
		r, err := cl.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "three"}))
		if err == nil {
			tag = r.Msg
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	all := append(loads[0].snapshot(), loads[1].snapshot()...)
	checkAcked(t, all, tag.GetMaxId())
	t.Logf("%d acknowledged (%d through the full member), max_id %d after restart", len(all), len(loads[1].snapshot()), tag.GetMaxId())
}

func (l *reserveLoad) snapshot() []*seqsvrv1.Segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*seqsvrv1.Segment(nil), l.acked...)
}
