package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// firstUseCallers is how many goroutines call NextSeq at once in
// BenchmarkSeqFirstUse's cases: many first uses wait on one write, and
// the batch grows with them.
var firstUseCallers = []int{32, 256}

// firstUseDuration is how long each phase of BenchmarkSeqFirstUse runs.
const firstUseDuration = 4 * time.Second

// BenchmarkSeqFirstUse measures what a key's first NextSeq costs against
// the real store (3 storesvrs: real Raft on disk; one allocsvr): the
// store writes that record first uses in the sections' durable used-sets
// (RaiseSections, one Raft entry each), and the latency a first use adds.
// firstUseCallers goroutines (one case each) call NextSeq, one key per call, over a 1M-key
// space of 10 sections of 100k: in phase "first" every call takes a key
// never used (the keys in a scattered order over all sections, each once,
// for firstUseDuration), in phase "used" the same callers call the keys
// phase one used again. The reference is one write per key (what keeping
// each key durable on its own would cost): x-one-per-key is the first-use
// writes over the first uses. keys/write is how many first uses share one
// write (group commit: keys that arrive while their section's write is in
// flight go together in the next). Reported: first-use writes and max_seq
// writes (Status of the allocsvr) per 1M calls of each phase, p50/p99 of
// each phase's calls, and the first use's p50 over the used key's.
func BenchmarkSeqFirstUse(b *testing.B) {
	for _, callers := range firstUseCallers {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { benchFirstUse(b, callers) })
	}
}

func benchFirstUse(b *testing.B, callers int) {
	for b.Loop() { // run with -benchtime 1x: each iteration starts a cluster
		c := startCluster(b, 3, 1, "--max-step", "1000000")
		const keyCount = 1_000_000
		createSpace(b, c, &seqsvrv1.CreateSpaceRequest{Space: "first", KeyCount: keyCount, SectionSize: 100_000, Step: 10_000})
		a := c.Allocs[0]
		// Load every section (each load records its key as used).
		for s := range uint64(10) {
			poll.UntilOK(b, 30*time.Second, "the allocsvr serves section", func() error { return nextSeq(c, a, "first", s*100_000) })
		}
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers, MaxConnsPerHost: callers}}
		defer hc.CloseIdleConnections()
		cl := seqsvrv1connect.NewSeqServiceClient(hc, a.URL())
		// Keys 1.. in a scattered order over every section (7919 is prime
		// to keyCount), none of them a section's first key used above.
		key := func(i uint64) uint64 { return (i + 1) * 7919 % keyCount }
		st0 := seqStatus(b, c, a)
		first := driveSeq(b, cl, callers, func(i uint64) (uint64, bool) { return key(i), key(i)%100_000 != 0 })
		st1 := seqStatus(b, c, a)
		used := driveSeq(b, cl, callers, func(i uint64) (uint64, bool) { return key(i % first.calls), key(i%first.calls)%100_000 != 0 })
		st2 := seqStatus(b, c, a)
		marks := float64(st1.GetFirstUseWrites() - st0.GetFirstUseWrites())
		b.ReportMetric(float64(first.calls), "first-uses")
		b.ReportMetric(marks*1e6/float64(first.calls), "first-use-writes/1M-first-uses")
		b.ReportMetric(marks/float64(first.calls), "x-one-per-key")
		b.ReportMetric(float64(first.calls)/marks, "keys/write")
		b.ReportMetric(float64(st1.GetMaxSeqWrites()-st0.GetMaxSeqWrites())*1e6/float64(first.calls), "max_seq-writes/1M-first-uses")
		b.ReportMetric(float64(first.calls)/firstUseDuration.Seconds(), "first-calls/s")
		b.ReportMetric(float64(first.p50.Microseconds()), "first-p50-us")
		b.ReportMetric(float64(first.p99.Microseconds()), "first-p99-us")
		b.ReportMetric(float64(used.calls)/firstUseDuration.Seconds(), "used-calls/s")
		b.ReportMetric(float64(used.p50.Microseconds()), "used-p50-us")
		b.ReportMetric(float64(used.p99.Microseconds()), "used-p99-us")
		b.ReportMetric(float64(first.p50)/float64(used.p50), "x-first-p50")
		b.ReportMetric(float64(st2.GetFirstUseWrites()-st1.GetFirstUseWrites()+st2.GetMaxSeqWrites()-st1.GetMaxSeqWrites())*1e6/float64(used.calls), "writes/1M-used-calls")
	}
}

type seqDrive struct {
	calls    uint64
	p50, p99 time.Duration
}

// driveSeq runs callers goroutines for firstUseDuration, call i
// taking key(i) (skipped when ok is false), and answers the calls made
// and their latencies.
func driveSeq(b *testing.B, cl seqsvrv1connect.SeqServiceClient, callers int, key func(uint64) (uint64, bool)) seqDrive {
	b.Helper()
	var next, calls atomic.Uint64
	var mu sync.Mutex
	var lat []time.Duration
	end := time.Now().Add(firstUseDuration)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(end) {
				k, ok := key(next.Add(1) - 1)
				if !ok {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				_, err := cl.NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: "first", Key: k}))
				d := time.Since(start)
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, d)
				calls.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(lat) == 0 {
		b.Fatal("no calls")
	}
	slices.Sort(lat)
	return seqDrive{calls: calls.Load(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

func seqStatus(tb testing.TB, c *launch.Cluster, p *launch.Proc) *seqsvrv1.SeqStatus {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.AllocClient(p).Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil {
		tb.Fatal(err)
	}
	return res.Msg.GetSeq()
}
