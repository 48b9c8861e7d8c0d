package segment

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The reference: a bare atomic add, the floor for any shared counter.
func BenchmarkAtomicAdd(b *testing.B) {
	var n atomic.Int64
	for b.Loop() {
		n.Add(1)
	}
	reportRate(b, 1)
}

func BenchmarkAtomicAddParallel(b *testing.B) {
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
		}
	})
	reportRate(b, 1)
}

// benchAllocator serves from huge segments so the store is never the
// bottleneck: what is measured is the hot path.
func benchAllocator(b *testing.B) *Allocator {
	f := newFakeStore()
	f.create("bench", 0, 1<<40)
	a := New(f, Config{MaxStep: 1 << 40, EmptyWait: 10 * time.Second})
	b.Cleanup(a.Close)
	if _, err := a.NextIDs(context.Background(), "bench", 1); err != nil {
		b.Fatal(err)
	}
	return a
}

// One ID per call, as every request asks, from all CPUs.
func BenchmarkNextIDsParallel(b *testing.B) {
	a := benchAllocator(b)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.NextIDs(ctx, "bench", 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, 1)
}

// NextIDs pays for its result slice; count=1000 shows the batch rate.
func BenchmarkNextIDs(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(countName(n), func(b *testing.B) {
			a := benchAllocator(b)
			ctx := context.Background()
			for b.Loop() {
				if _, err := a.NextIDs(ctx, "bench", n); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, n)
		})
	}
}

func countName(n int) string {
	switch n {
	case 1:
		return "count=1"
	case 100:
		return "count=100"
	}
	return "count=1000"
}

func reportRate(b *testing.B, perOp int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)*float64(perOp)/s, "IDs/s")
	}
}

// BenchmarkNextIDsVsAtomicAdd interleaves chunks of bare atomic adds and
// NextIDs(ctx, tag, 1) calls in one goroutine and reports their time
// ratio, so noise from a shared machine hits both sides alike. The ratio
// (x-atomic) is what a request's ID costs above the floor, its one-element
// result slice included.
func BenchmarkNextIDsVsAtomicAdd(b *testing.B) {
	a := benchAllocator(b)
	ctx := context.Background()
	var n atomic.Int64
	var tAdd, tNext time.Duration
	const chunk = 1 << 14
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		k := min(chunk, b.N-done)
		t0 := time.Now()
		for range k {
			n.Add(1)
		}
		t1 := time.Now()
		for range k {
			if _, err := a.NextIDs(ctx, "bench", 1); err != nil {
				b.Fatal(err)
			}
		}
		tAdd += t1.Sub(t0)
		tNext += time.Since(t1)
	}
	if tAdd > 0 && tNext > 0 {
		b.ReportMetric(float64(tNext)/float64(tAdd), "x-atomic")
		b.ReportMetric(float64(b.N)/tNext.Seconds(), "IDs/s")
		b.ReportMetric(float64(tAdd.Nanoseconds())/float64(b.N), "ns/add")
		b.ReportMetric(float64(tNext.Nanoseconds())/float64(b.N), "ns/NextIDs")
	}
}
