package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// rollingClients is how many callers keep reserving during a rolling
// restart, each through its own storeclient (the allocsvr's retry path).
const rollingClients = 4

// rollingRounds is how many rolling restarts each mode gets; the median
// and the worst of their longest gaps are reported.
const rollingRounds = 5

// BenchmarkStoreRollingRestart restarts the three members of a store one at
// a time (SIGTERM, start again, wait for /readyz; the followers, then the
// leader), as an upgrade does, while rollingClients callers keep reserving
// through alloc/storeclient. It reports the longest time in which no
// reservation succeeded, with the leader's handover on stop turned off
// (it just stops; the others elect a leader) and on, in the same run:
// x-handover-off is the ratio of the two medians.
func BenchmarkStoreRollingRestart(b *testing.B) {
	gaps := map[bool][]time.Duration{}
	for _, on := range []bool{false, true} {
		c := startQuiet(b, launch.Options{Stores: 3, StoreArgs: []string{fmt.Sprintf("--handover-on-stop=%t", on)}})
		createTag(b, c, "rolling", 1)
		for range rollingRounds {
			gaps[on] = append(gaps[on], rollingRestart(b, c))
		}
		c.Close()
		b.Logf("handover-on-stop=%t: longest gaps %v", on, gaps[on])
	}
	off, on := median(gaps[false]), median(gaps[true])
	b.ReportMetric(float64(off.Milliseconds()), "handover-off-gap-ms")
	b.ReportMetric(float64(on.Milliseconds()), "handover-on-gap-ms")
	b.ReportMetric(float64(slices.Max(gaps[false]).Milliseconds()), "handover-off-worst-ms")
	b.ReportMetric(float64(slices.Max(gaps[true]).Milliseconds()), "handover-on-worst-ms")
	b.ReportMetric(float64(on)/float64(off), "x-handover-off")
}

// rollingRestart restarts every member of c once under load, the leader
// last, and returns the longest time no reservation succeeded, from the
// first SIGTERM to the last member's /readyz.
func rollingRestart(b *testing.B, c *launch.Cluster) time.Duration {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load := startReserving(b, ctx, c.StoreURLs())
	load.waitFirst(b)
	leader, _ := leaderURL(b, c)
	var order []*launch.Proc
	for _, s := range c.Stores {
		if s != leader {
			order = append(order, s)
		}
	}
	start := time.Now()
	for _, s := range order {
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		restart(b, c, s)
	}
	// The leader last, whoever leads once the followers are back.
	if l, _ := leaderURL(b, c); l != leader {
		b.Logf("leadership moved to %s during the followers' restarts", l.Name)
		leader = l
	}
	if err := leader.Stop(); err != nil {
		b.Fatal(err)
	}
	restart(b, c, leader)
	end := time.Now()
	cancel()
	return load.longestGap(start, end)
}

// reserving is the load: callers reserving in a loop, and when each
// reservation succeeded.
type reserving struct {
	mu    sync.Mutex
	times []time.Time
	first chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

func startReserving(b *testing.B, ctx context.Context, urls []string) *reserving {
	b.Helper()
	r := &reserving{first: make(chan struct{})}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range rollingClients {
		sc, err := storeclient.New(urls, storeclient.Options{Logger: quiet, RetryBudget: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for ctx.Err() == nil {
				if _, err := sc.ReserveSegment(ctx, "rolling", 1, ""); err == nil {
					r.mu.Lock()
					r.times = append(r.times, time.Now())
					r.mu.Unlock()
					r.once.Do(func() { close(r.first) })
				}
			}
		}()
	}
	b.Cleanup(r.wg.Wait)
	return r
}

func (r *reserving) waitFirst(b *testing.B) {
	select {
	case <-r.first:
	case <-time.After(30 * time.Second):
		b.Fatal("no reservation succeeded within 30s")
	}
}

// longestGap is the longest stretch of [start, end] without a success.
func (r *reserving) longestGap(start, end time.Time) time.Duration {
	r.mu.Lock()
	ts := slices.Clone(r.times)
	r.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	prev := start
	for _, t := range ts {
		if t.Before(start) {
			continue
		}
		if t.After(end) {
			break
		}
		longest = max(longest, t.Sub(prev))
		prev = t
	}
	return max(longest, end.Sub(prev))
}
