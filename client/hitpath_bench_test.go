package client

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkNextIDHitPath is the local buffer's common case alone: NextID
// on a batch already in memory (filled here, no server, no refill), in
// 30 rounds of 8000 IDs interleaved with rounds of as many atomic adds
// (the reference), reporting the median of the rounds' ratios. The
// network benchmark (BenchmarkNextID in client_test) adds what a real
// refill costs the caller.
func BenchmarkNextIDHitPath(b *testing.B) {
	c, err := New([]string{"http://127.0.0.1:1"}, WithLocalBuffer(MaxCount))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf, err := c.buffer("hit")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const ops = 8000
	var counter atomic.Int64
	var hits, refs, ratios []float64
	fill := func() {
		nb := &batch{first: 1, n: ops, trigger: -1} // no load: there is no server
		buf.cur.Store(nb)
		c.lastBuf.Store(buf)
	}
	fill()
	for b.Loop() { // ns/op: the hit path, with a refill of the batch every 8000
		if buf.cur.Load().used() {
			fill()
		}
		if _, err := c.NextID(ctx, "hit"); err != nil {
			b.Fatal(err)
		}
	}
	for range 30 {
		fill()
		start := time.Now()
		for range ops {
			if _, err := c.NextID(ctx, "hit"); err != nil {
				b.Fatal(err)
			}
		}
		hit := float64(time.Since(start).Nanoseconds()) / ops
		start = time.Now()
		for range ops {
			counter.Add(1)
		}
		ref := float64(time.Since(start).Nanoseconds()) / ops
		hits, refs, ratios = append(hits, hit), append(refs, ref), append(ratios, hit/ref)
	}
	med := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	b.ReportMetric(med(hits), "hit-ns")
	b.ReportMetric(med(refs), "atomic-ns")
	b.ReportMetric(med(ratios), "x-atomic")
}

// BenchmarkNextIDHitInstr runs 8000 hits of the local buffer and 8000
// atomic adds, each loop in its own function, for counting instructions
// (which do not move with the machine's load) rather than time:
//
//	go test -c -o client.test ./client/
//	valgrind --tool=callgrind --toggle-collect='*instrHitLoop*' --toggle-collect='*instrAddLoop*' ./client.test -test.run '^$' -test.bench NextIDHitInstr -test.benchtime 1x -test.short
//	callgrind_annotate callgrind.out.* | grep -E 'instrHitLoop|instrAddLoop'
func BenchmarkNextIDHitInstr(b *testing.B) {
	c, err := New([]string{"http://127.0.0.1:1"}, WithLocalBuffer(MaxCount))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf, err := c.buffer("hit")
	if err != nil {
		b.Fatal(err)
	}
	const ops = 8000
	var counter atomic.Int64
	for b.Loop() {
		nb := &batch{first: 1, n: ops, trigger: -1} // no load: there is no server
		buf.cur.Store(nb)
		c.lastBuf.Store(buf)
		instrHitLoop(b, c, ops)
		instrAddLoop(&counter, ops)
	}
}

//go:noinline
func instrHitLoop(b *testing.B, c *Client, n int) {
	ctx := context.Background()
	for range n {
		if _, err := c.NextID(ctx, "hit"); err != nil {
			b.Fatal(err)
		}
	}
}

//go:noinline
func instrAddLoop(counter *atomic.Int64, n int) {
	for range n {
		counter.Add(1)
	}
}
