package segment

import (
	"context"
	"fmt"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Range is the IDs First..Last, both included (First <= Last).
type Range struct{ First, Last int64 }

// Len is how many IDs r holds.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// appendRange appends r to out, joined to the last range when they touch,
// so a request that crosses from carry or one segment into the next
// contiguous one still answers one range.
func appendRange(out []Range, r Range) []Range {
	if n := len(out); n > 0 && out[n-1].Last < r.First && out[n-1].Last+1 == r.First {
		out[n-1].Last = r.Last
		return out
	}
	return append(out, r)
}

// countIDs is how many IDs rs hold.
func countIDs(rs []Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// NextIDRanges returns count IDs of tag as increasing, disjoint ranges,
// under the same rules as NextIDs (it takes the same runs from the same
// buffers: the two can be mixed freely) but without a word of work or
// memory per ID, so count may go up to spec.MaxRangeCount. The answer
// holds one range per segment it touched (and per carried run), a handful
// at most. count must be in 1..spec.MaxRangeCount.
func (a *Allocator) NextIDRanges(ctx context.Context, tag string, count int) ([]Range, error) {
	if count < 1 || count > spec.MaxRangeCount {
		return nil, fmt.Errorf("%w: count %d out of range 1..%d", errs.InvalidArgument, count, spec.MaxRangeCount)
	}
	if t := a.find(tag); t != nil {
		if p, ok := a.takeFast(t, int64(count)); ok {
			return []Range{{First: p, Last: p + int64(count) - 1}}, nil
		}
	}
	return a.nextSlow(ctx, tag, count)
}

// takeFast takes n IDs from the current segment of t with one compare
// and swap when it holds them all, and returns the first; it kicks the
// next load when the run crosses the prefetch point.
func (a *Allocator) takeFast(t *tagState, n int64) (int64, bool) {
	b := t.cur.Load()
	for {
		p := b.pos.Load()
		if !b.holds(p) || b.last-p < n-1 { // no overflow: first <= p <= last, first >= 1
			return 0, false
		}
		if b.pos.CompareAndSwap(p, p+n) {
			if p >= b.prefetchAt-n && t.needLoad.Load() {
				a.kick(t)
			}
			return p, true
		}
	}
}

// expand lists the IDs of rs, n in all.
func expand(rs []Range, n int) []int64 {
	out := make([]int64, 0, n)
	for _, r := range rs {
		for id := r.First; ; id++ {
			out = append(out, id)
			if id == r.Last { // not id <= r.Last: Last may be MaxInt64
				break
			}
		}
	}
	return out
}
