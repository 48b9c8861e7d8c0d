package client

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/seqsvr/seqsvr/internal/spec"
)

// MaxLocalBuffer is the largest WithLocalBuffer size: one NextIDRanges
// call's largest count (spec.MaxRangeCount). Memory is not what bounds
// it (a batch is kept as ranges); IDs lost at exit, up to twice this per
// tag, are.
const MaxLocalBuffer = spec.MaxRangeCount

// maxLoadCalls bounds the NextIDs calls one load keeps in flight: enough
// to hide a round trip behind the others, few enough not to flood one
// allocsvr with one client's refill.
const maxLoadCalls = 8

// fetchBatch is the local buffer's load from an allocsvr without
// NextIDRanges: it fetches n IDs of tag (n may exceed MaxCount) with
// ceil(n/MaxCount) NextIDs calls, at most maxLoadCalls at a time,
// each with failover and preferring prefer, and returns them merged in
// increasing order, with an endpoint that served one of them. IDs are
// unique across the calls (the servers never hand out an ID twice), so
// the merge is a plain sort. It fails only when every call failed; the
// IDs of the calls that succeeded are returned even when others failed,
// because they are reserved either way and dropping them only burns them.
func (c *Client) fetchBatch(ctx context.Context, tag string, n int, prefer *endpoint) ([]int64, *endpoint, error) {
	if n <= MaxCount {
		return c.fetchIDs(ctx, tag, n, prefer)
	}
	calls := (n + MaxCount - 1) / MaxCount
	parts := make([][]int64, calls)
	eps := make([]*endpoint, calls)
	errs := make([]error, calls)
	sem := make(chan struct{}, maxLoadCalls)
	var wg sync.WaitGroup
	for i := range calls {
		count := min(MaxCount, n-i*MaxCount)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			parts[i], eps[i], errs[i] = c.fetchIDs(ctx, tag, count, prefer)
		}()
	}
	wg.Wait()
	// The next load prefers the endpoint that served the highest IDs:
	// after a failover within this load, its answers are the likeliest
	// to stay above this batch.
	var ep *endpoint
	var firstErr, top = error(nil), int64(0)
	for i := range calls {
		switch {
		case errs[i] != nil:
			firstErr = cmp.Or(firstErr, errs[i])
		case len(parts[i]) > 0 && (ep == nil || parts[i][len(parts[i])-1] > top):
			ep, top = eps[i], parts[i][len(parts[i])-1]
		}
	}
	if ep == nil {
		if firstErr == nil { // only empty answers: let the caller ask again
			return nil, eps[0], nil
		}
		return nil, nil, firstErr
	}
	return mergeIDs(parts), ep, nil
}

// mergeIDs joins answers, each strictly increasing, into one increasing
// slice. Answers of one allocsvr are mostly disjoint ranges (a call takes
// a contiguous run of its segment), so ordering the answers by their
// first ID usually suffices; when answers interleave (calls that spanned
// a segment switch, or went to different allocsvrs), the whole is sorted.
func mergeIDs(parts [][]int64) []int64 {
	parts = slices.DeleteFunc(parts, func(p []int64) bool { return len(p) == 0 })
	slices.SortFunc(parts, func(a, b []int64) int { return cmp.Compare(a[0], b[0]) })
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	out := make([]int64, 0, total)
	sorted := true
	for _, p := range parts {
		if len(out) > 0 && p[0] <= out[len(out)-1] {
			sorted = false
		}
		out = append(out, p...)
	}
	if !sorted {
		slices.Sort(out)
	}
	return out
}
