package snowflake

import (
	"context"
	"testing"

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
