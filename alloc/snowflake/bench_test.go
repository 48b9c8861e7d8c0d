package snowflake

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// The layout's limit: 4096 IDs per ms per worker (12 sequence bits).
const limitPerMs = 4096

// reportOfLimit reports achieved IDs per ms and their ratio to the layout's
// limit, the speed reference of the same run: a generator at 1.0 is never
// the bottleneck.
func reportOfLimit(b *testing.B, ids int) {
	ms := float64(b.Elapsed().Nanoseconds()) / 1e6
	if ms <= 0 {
		return
	}
	b.ReportMetric(float64(ids)/ms, "ids/ms")
	b.ReportMetric(float64(ids)/ms/limitPerMs, "of-limit")
}

// benchGenerator is worker 1 of the default layout on clk.
func benchGenerator(b *testing.B, clk clock.Clock) *Generator {
	g, err := NewGenerator(spec.DefaultLayout(), 1, 0, clk)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// runNextID times b.N calls of g.NextID.
func runNextID(b *testing.B, g *Generator) {
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := g.NextID(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnowflakeNextID(b *testing.B) {
	g := benchGenerator(b, clock.System())
	runNextID(b, g)
	reportOfLimit(b, b.N)
}

func BenchmarkSnowflakeNextIDParallel(b *testing.B) {
	g := benchGenerator(b, clock.System())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := g.NextID(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportOfLimit(b, b.N)
}

// BenchmarkSnowflakeBatch10000 asks for the largest batch per call.
func BenchmarkSnowflakeBatch10000(b *testing.B) {
	g := benchGenerator(b, clock.System())
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := g.NextIDs(ctx, spec.MaxCount); err != nil {
			b.Fatal(err)
		}
	}
	reportOfLimit(b, b.N*spec.MaxCount)
}

// BenchmarkSnowflakeServiceNextIDs goes through Service (lease check,
// metrics, data-dir high-water mark with fsync) as the RPC does.
func BenchmarkSnowflakeServiceNextIDs(b *testing.B) {
	clk := clock.System()
	cfg := testConfig("bench", clk, b.TempDir())
	s, err := Start(context.Background(), newFakeWorkerStore(clk), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := s.NextIDs(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportOfLimit(b, b.N)
}

// BenchmarkSnowflakeGenerateCost measures the generator's own cost per ID
// with a clock that jumps to the next ms instead of waiting for it, and
// reports the headroom: how many times faster than the layout's limit
// (244 ns per ID) it could issue if the clock allowed.
func BenchmarkSnowflakeGenerateCost(b *testing.B) {
	g := benchGenerator(b, clocktest.New(t0))
	runNextID(b, g)
	if ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N); ns > 0 {
		b.ReportMetric(1e6/limitPerMs/ns, "x-headroom")
	}
}

// oldHighWater is the high-water cache as it was before the fix: it wrote
// only when the mark was below the issued timestamp, so the generator's
// background extension (which asks while the mark still covers the
// timestamp) never wrote, and once per highWaterAhead an ID passed the
// mark and paid the write and its fsyncs on the ID path.
type oldHighWater struct {
	c       *cache
	aheadMs int64
}

func (h oldHighWater) Reserve(_, targetMs int64) (int64, error) {
	return h.c.Reserve(targetMs-h.aheadMs, targetMs)
}

// Load of BenchmarkSnowflakeP999UnderLoad: loadCallers goroutines each
// call NextIDs(1) every loadInterval (about 16,000 calls a second), for
// loadRound per side and round.
const (
	loadCallers  = 16
	loadInterval = time.Millisecond
	loadRound    = 3 * time.Second
)

// BenchmarkSnowflakeP999UnderLoad measures the latency of Service.NextIDs
// (what the NextSnowflakeIDs RPC calls) under a steady load, with the
// data-dir high-water mark on the real file system, once as fixed and
// once with the old cache rule (oldHighWater), in alternating rounds of
// loadRound each (b.N rounds; run with -benchtime=3x or more). It reports
// each side's p50 and p999 in µs and the old p999 as a ratio to the fixed
// one (x-old-p999): a synchronous fsync on the ID path once a second
// shows there, the background extension does not.
func BenchmarkSnowflakeP999UnderLoad(b *testing.B) {
	clk := clock.System()
	cfg := testConfig("bench", clk, b.TempDir())
	cfg.RenewInterval = time.Second // rounds outlast the lease
	s, err := Start(context.Background(), newFakeWorkerStore(clk), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := s.gen.Load()
	fixed, old := highWater(s.cache), oldHighWater{c: s.cache, aheadMs: highWaterAhead.Milliseconds()}
	var lat [2][]time.Duration // 0: fixed, 1: old
	b.ResetTimer()
	for range b.N {
		for side, hw := range []highWater{fixed, old} {
			g.mu.Lock()
			g.hw = hw
			g.mu.Unlock()
			lat[side] = append(lat[side], loadRoundLatencies(b, s)...)
		}
	}
	b.StopTimer()
	p := func(side int, q float64) float64 {
		l := lat[side]
		slices.Sort(l)
		return float64(l[min(len(l)-1, int(q*float64(len(l))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p(0, 0.5), "p50-fixed-µs")
	b.ReportMetric(p(1, 0.5), "p50-old-µs")
	b.ReportMetric(p(0, 0.999), "p999-fixed-µs")
	b.ReportMetric(p(1, 0.999), "p999-old-µs")
	b.ReportMetric(p(1, 0.999)/p(0, 0.999), "x-old-p999")
	b.ReportMetric(float64(len(lat[0])), "calls/side")
}

// loadRoundLatencies runs one round of the load on s and returns every
// call's latency.
func loadRoundLatencies(b *testing.B, s *Service) []time.Duration {
	ctx := context.Background()
	out := make([][]time.Duration, loadCallers)
	var wg sync.WaitGroup
	end := time.Now().Add(loadRound)
	for w := range loadCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now()
			for next.Before(end) {
				start := time.Now()
				if _, err := s.NextIDs(ctx, 1); err != nil {
					b.Error(err)
					return
				}
				out[w] = append(out[w], time.Since(start))
				next = next.Add(loadInterval)
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				} else {
					next = time.Now() // fell behind: no burst to catch up
				}
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range out {
		all = append(all, l...)
	}
	return all
}
