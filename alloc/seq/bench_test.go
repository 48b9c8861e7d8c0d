package seq

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// The benchmarks serve from the in-memory fakeStore (fake_test.go), which
// answers a raise at once, with an hour-long lease; the Node runs on the
// system clock, as in production, so the lease checks cost what they cost
// there: what is measured is this package's own work.

// benchNode is node "a" of a fresh store with space "b", its lease taken.
func benchNode(b *testing.B, keyCount, sectionSize uint64, step int64) (*fakeStore, *Node) {
	b.Helper()
	c := clocktest.New(t0)
	st := newFakeStore(c)
	st.ttl = time.Hour
	st.createSpace("b", keyCount, sectionSize, step)
	n, err := New(st, Config{NodeID: "a", URL: "http://a"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.stop)
	if err := n.beat(context.Background(), false); err != nil {
		b.Fatal(err)
	}
	return st, n
}

// spread is n distinct keys evenly spaced over 0..keyCount-1 (every key
// when n == keyCount), in a scattered order (7919 is prime to any n made
// of 2s and 5s), so successive calls do not walk memory in order.
func spread(n int, keyCount uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i) * 7919 % uint64(n) * (keyCount / uint64(n))
	}
	return out
}

// BenchmarkNextSeqVsAtomicAdd interleaves, in one goroutine, chunks of
// three loops over the same keys, spread over one loaded section of 100k:
// the reference atomic.AddInt64(&s[key], 1) on a flat slice; NextSeq's
// section hot path (take on the held section: lease check, value, limit,
// raise-ahead test under the section's mutex); and Node.NextSeq, the
// public one-key call the SeqService NextSeq handler, the HTTP/1.1 front
// and the Leaf GETs make (space check, routing table, owner, section
// lookup, take). x-atomic is NextSeq's time over the add's, x-atomic-take
// take's. The step (10^9) makes raises rare; the fake store answers them
// at once. With -benchmem, allocs/op is all three loops' together: 0 says
// NextSeq allocates nothing on this path. A fourth loop times the lease
// check's clock read alone (time.Since of an epoch, the monotonic clock),
// which every NextSeq makes: x-atomic-clock is its time over the add's,
// a floor under x-atomic that no change to the rest of the path removes.
func BenchmarkNextSeqVsAtomicAdd(b *testing.B) {
	const size = 100_000
	_, n := benchNode(b, size, size, 1_000_000_000)
	ctx := context.Background()
	keys := spread(size, size)
	// The load, and every key's first use (recorded in the store's
	// used-set once per key): what is timed is NextSeq of keys in use.
	for i := 0; i < size; i += 10000 {
		if _, _, err := n.Next(ctx, "b", keys[i:i+10000], false); err != nil {
			b.Fatal(err)
		}
	}
	s, err := n.section(secKey{space: "b", section: 0})
	if err != nil {
		b.Fatal(err)
	}
	ref := make([]int64, size)
	var tAdd, tTake, tNext, tClock time.Duration
	epoch := time.Now()
	const chunk = 1 << 14
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		k := min(chunk, b.N-done)
		t0 := time.Now()
		for j := range k {
			atomic.AddInt64(&ref[keys[(done+j)%size]], 1)
		}
		t1 := time.Now()
		for j := range k {
			if _, err := n.take(ctx, s, int(keys[(done+j)%size]), opNext); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		for j := range k {
			if _, _, err := n.NextSeq(ctx, "b", keys[(done+j)%size], false); err != nil {
				b.Fatal(err)
			}
		}
		t3 := time.Now()
		for range k {
			clockSink += int64(time.Since(epoch))
		}
		tAdd += t1.Sub(t0)
		tTake += t2.Sub(t1)
		tNext += t3.Sub(t2)
		tClock += time.Since(t3)
	}
	if tAdd > 0 && tNext > 0 {
		per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
		b.ReportMetric(per(tAdd), "ns/add")
		b.ReportMetric(per(tTake), "ns/take")
		b.ReportMetric(per(tNext), "ns/NextSeq")
		b.ReportMetric(float64(tTake)/float64(tAdd), "x-atomic-take")
		b.ReportMetric(float64(tNext)/float64(tAdd), "x-atomic")
		b.ReportMetric(float64(b.N)/tNext.Seconds(), "calls/s")
		b.ReportMetric(per(tClock), "ns/clock")
		b.ReportMetric(float64(tClock)/float64(tAdd), "x-atomic-clock")
	}
}

// clockSink keeps the clock loop of BenchmarkNextSeqVsAtomicAdd from
// being optimized away.
var clockSink int64

// BenchmarkSeqMemoryPerMillionKeys touches each key of a 1M-key space (10
// sections of 100k) once and reports the live heap it grew by, after a GC
// before and after, per million keys, beside the floor of 8 bytes per key
// (one int64 each).
func BenchmarkSeqMemoryPerMillionKeys(b *testing.B) {
	const keyCount, sectionSize = 1_000_000, 100_000
	keys := spread(keyCount, keyCount)
	ctx := context.Background()
	var grown float64
	for b.Loop() {
		_, n := benchNode(b, keyCount, sectionSize, 10_000)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < keyCount; i += 10_000 { // NextSeqs of 10k keys
			if _, _, err := n.Next(ctx, "b", keys[i:i+10_000], false); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := n.Status().GetSpaces()[0].GetKeysInMemory(); got != keyCount {
			b.Fatalf("%d keys in memory, want %d", got, keyCount)
		}
		grown += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(n)
		n.dropAll()
	}
	perKey := grown / float64(b.N) / keyCount
	b.ReportMetric(perKey, "MB/1M-keys") // bytes per key = MB (10^6 bytes) per million keys
	b.ReportMetric(perKey/8, "x-8B-floor")
}

// BenchmarkSeqRaftWrites makes 1M NextSeq calls (one key each) over a
// 1M-key space of 10 sections of 100k, step 10000 (the default), and
// counts the RaiseSections writes they cost (Status's max_seq writes:
// loads and raises) against the reference of one write per key used.
// keys=1000000 gives every key one call; with fewer keys (spread over all
// sections, called in turn) each takes more values, so sections pass
// their step and raise: keys=100 gives each 10^4. first-use-writes are
// the separate writes that record a key's first use in the store's
// used-set (CurrentSeqs answers 0 for keys never used, across owners):
// one per first use for calls made one after another; callers=64 makes
// the same calls from 64 goroutines, whose first uses share writes.
func BenchmarkSeqRaftWrites(b *testing.B) {
	const keyCount, sectionSize, calls = 1_000_000, 100_000, 1_000_000
	for _, c := range []struct{ used, callers int }{{1_000_000, 1}, {1_000_000, 64}, {1000, 1}, {100, 1}} {
		b.Run(fmt.Sprintf("keys=%d/callers=%d", c.used, c.callers), func(b *testing.B) {
			keys := spread(c.used, keyCount)
			ctx := context.Background()
			var writes, marks float64
			for b.Loop() {
				_, n := benchNode(b, keyCount, sectionSize, 10_000)
				var wg sync.WaitGroup
				for g := range c.callers {
					wg.Go(func() {
						for call := g; call < calls; call += c.callers {
							i := call % c.used
							if _, _, err := n.Next(ctx, "b", keys[i:i+1], false); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				settle(b, n)
				st := n.Status()
				writes += float64(st.GetMaxSeqWrites())
				marks += float64(st.GetFirstUseWrites())
				n.dropAll()
			}
			writes /= float64(b.N)
			marks /= float64(b.N)
			b.ReportMetric(writes*1e6/calls, "writes/1M-calls")
			b.ReportMetric(writes/float64(c.used), "x-one-per-key")
			b.ReportMetric(marks*1e6/calls, "first-use-writes/1M-calls")
		})
	}
}

// settle waits until no section has a raise in flight, so the write count
// includes every raise the calls started.
func settle(b *testing.B, n *Node) {
	b.Helper()
	poll.Until(b, 5*time.Second, "no raise in flight", func() bool {
		n.mu.RLock()
		defer n.mu.RUnlock()
		for _, s := range n.sections {
			s.mu.Lock()
			busy := s.raising != nil
			s.mu.Unlock()
			if busy {
				return false
			}
		}
		return true
	})
}

// BenchmarkNextSeqInstr runs the reference loop (an atomic add on a slice
// element) and Node.NextSeq over the same 100k used keys, each in its own
// function, for counting instructions rather than time: instruction counts
// do not move with the machine's load. Run the test binary under
// callgrind and compare the two functions' inclusive counts:
//
//	go test -c -o seq.test ./alloc/seq/
//	valgrind --tool=callgrind --callgrind-out-file=cg.out ./seq.test -test.run '^$' -test.bench NextSeqInstr -test.benchtime 1x
//	callgrind_annotate --inclusive=yes cg.out | grep -E 'instrAddLoop|instrNextSeqLoop'
func BenchmarkNextSeqInstr(b *testing.B) {
	const size = 100_000
	_, n := benchNode(b, size, size, 1_000_000_000)
	ctx := context.Background()
	keys := spread(size, size)
	for i := 0; i < size; i += 10000 {
		if _, _, err := n.Next(ctx, "b", keys[i:i+10000], false); err != nil {
			b.Fatal(err)
		}
	}
	ref := make([]int64, size)
	for b.Loop() {
		instrAddLoop(ref, keys)
		instrNextSeqLoop(b, n, keys)
	}
}

//go:noinline
func instrAddLoop(ref []int64, keys []uint64) {
	for _, k := range keys {
		atomic.AddInt64(&ref[k], 1)
	}
}

//go:noinline
func instrNextSeqLoop(b *testing.B, n *Node, keys []uint64) {
	ctx := context.Background()
	for _, k := range keys {
		if _, _, err := n.NextSeq(ctx, "b", k, false); err != nil {
			b.Fatal(err)
		}
	}
}
