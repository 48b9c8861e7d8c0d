package segment

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// NextIDRanges answers the IDs NextIDs would, as few ranges as the
// segments allow: one per run of contiguous IDs.
func TestSegmentNextIDRanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		step int64
		cfg  Config
		// before runs on the allocator first (and on a second allocator
		// sharing the store, to put a gap between this one's segments).
		before func(t *testing.T, a, other *Allocator)
		count  int
		want   []Range
	}{
		{name: "fresh tag", step: 100, count: 10, want: []Range{{1, 10}}},
		{name: "count 1", step: 100, count: 1, want: []Range{{1, 1}}},
		{name: "two contiguous segments answer one range", step: 100,
			before: func(t *testing.T, a, _ *Allocator) {
				mustRanges(t, a, "t", 95)
				poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
			},
			count: 10, want: []Range{{96, 105}}},
		{name: "step far below the count: several loads", step: 7, count: 40, want: []Range{{1, 40}}},
		{name: "the largest count, far above NextIDs' bound", step: 1_000_000, count: spec.MaxRangeCount,
			want: []Range{{1, spec.MaxRangeCount}}},
		{name: "a gap between segments answers two ranges", step: 10, cfg: Config{MaxStep: 10},
			before: func(t *testing.T, a, other *Allocator) {
				mustRanges(t, a, "t", 1) // 1..10 current, 11..20 prefetched
				poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
				mustRanges(t, other, "t", 1) // the other takes 21..30, 31..40
				poll.Until(t, 10*time.Second, "other's next segment", nextReady(other, "t"))
			},
			count: 25, want: []Range{{2, 20}, {41, 46}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f, a := setup(t, "t", 0, tc.step, tc.cfg)
			other := newTest(t, f, tc.cfg)
			if tc.before != nil {
				tc.before(t, a, other)
			}
			if got := mustRanges(t, a, "t", tc.count); !slices.Equal(got, tc.want) {
				t.Fatalf("ranges %v, want %v", got, tc.want)
			}
		})
	}
}

func mustRanges(t *testing.T, a *Allocator, tag string, count int) []Range {
	t.Helper()
	rs, err := a.NextIDRanges(testCtx(t), tag, count)
	if err != nil {
		t.Fatalf("NextIDRanges(%q, %d): %v", tag, count, err)
	}
	checkRanges(t, rs, count)
	return rs
}

// checkRanges fails unless rs are non-empty, disjoint, increasing and
// not touching (touching ones are joined), count IDs in all.
func checkRanges(t *testing.T, rs []Range, count int) {
	t.Helper()
	for i, r := range rs {
		if r.First > r.Last || r.First < 1 || i > 0 && r.First <= rs[i-1].Last+1 {
			t.Fatalf("ranges %v: not disjoint, increasing, positive and joined", rs)
		}
	}
	if n := countIDs(rs); n != int64(count) {
		t.Fatalf("ranges %v hold %d IDs, want %d", rs, n, count)
	}
}

func TestSegmentNextIDRangesInvalidCount(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{})
	for _, n := range []int{0, -1, spec.MaxRangeCount + 1, math.MinInt} {
		if _, err := a.NextIDRanges(ctx, "t", n); !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("count %d: %v, want errs.InvalidArgument", n, err)
		}
	}
	if _, err := a.NextIDRanges(ctx, "bad tag", 1); !errors.Is(err, errs.InvalidArgument) {
		t.Errorf("bad tag: %v, want errs.InvalidArgument", err)
	}
	if n := f.reserves.Load(); n != 0 {
		t.Fatalf("invalid input reached the store %d times", n)
	}
	if got := mustRanges(t, a, "t", 3); !slices.Equal(got, []Range{{1, 3}}) {
		t.Fatalf("first valid request %v, want 1..3: nothing burned", got)
	}
}

// A ranges request that cannot complete while the store is down keeps
// what it took for the next request, as NextIDs does; the two calls share
// the carried IDs.
func TestSegmentNextIDRangesCarry(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{MaxStep: 1, LoadBackoff: time.Millisecond, LoadBackoffMax: time.Millisecond})
	mustNext(t, ctx, a, "t")
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	f.down.Store(true)
	mustRanges(t, a, "t", 16) // 2..17
	if _, err := a.NextIDRanges(ctx, "t", 5); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("5 IDs with 3 buffered and the store down: %v, want unavailable", err)
	}
	if ids, err := a.NextIDs(ctx, "t", 2); err != nil || !slices.Equal(ids, []int64{18, 19}) {
		t.Fatalf("NextIDs after the failed ranges call: %v %v, want the carried 18, 19", ids, err)
	}
	f.down.Store(false)
	var rs []Range
	poll.Until(t, 10*time.Second, "recovery", func() bool {
		var err error
		rs, err = a.NextIDRanges(ctx, "t", 5)
		return err == nil
	})
	if !slices.Equal(rs, []Range{{20, 24}}) {
		t.Fatalf("after recovery %v, want the carried 20 joined to 21..24", rs)
	}
}

// At the top of the int64 range the ranges end at MaxInt64 and never
// wrap; concurrent callers split the last IDs without a duplicate.
func TestSegmentNextIDRangesNearMaxInt64(t *testing.T) {
	ctx := testCtx(t)
	for _, start := range []int64{math.MaxInt64 - 8, math.MaxInt64 - 9} {
		for range 20 {
			f := newFakeStore()
			f.create("edge", start, 4)
			a := newTest(t, f, Config{MaxStep: 4, EmptyWait: 50 * time.Millisecond})
			var mu sync.Mutex
			var got []int64
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 4 {
						rs, err := a.NextIDRanges(ctx, "edge", 1+w%2)
						if err != nil {
							continue
						}
						mu.Lock()
						got = append(got, expand(rs, 1+w%2)...)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			checkUnique(t, "edge", got, f.segments("edge"))
			for _, id := range got {
				if id <= start {
					t.Fatalf("start %d: id %d handed out", start, id)
				}
			}
			if len(got) != 8 {
				t.Fatalf("start %d: %d IDs handed out, want all 8 below MaxInt64 (%v)", start, len(got), got)
			}
		}
	}
	if ids := expand([]Range{{math.MaxInt64 - 1, math.MaxInt64}}, 2); !slices.Equal(ids, []int64{math.MaxInt64 - 1, math.MaxInt64}) {
		t.Fatalf("expand at MaxInt64: %v", ids)
	}
}
