package client

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// idRange is the IDs first..last, both included.
type idRange struct{ first, last int64 }

func (r idRange) len() int64 { return r.last - r.first + 1 }

// rangesRetry is how long the client uses NextIDs for its loads after an
// allocsvr answered NextIDRanges with unimplemented (a version before
// it), before it tries NextIDRanges again: a rolling upgrade is noticed
// within that time.
const rangesRetry = time.Minute

// fetchRanges fetches n (1..MaxLocalBuffer) IDs of tag for the local
// buffer as increasing, disjoint ranges, preferring prefer. It asks with
// one NextIDRanges call: the answer is a few ranges whatever n is, so no
// per-ID work on either side. An allocsvr too old for it answers
// unimplemented; the client then loads with NextIDs (fetchBatch) for
// rangesRetry.
func (c *Client) fetchRanges(ctx context.Context, tag string, n int, prefer *endpoint) ([]idRange, *endpoint, error) {
	if time.Now().UnixNano() >= c.rangesOffUntil.Load() {
		rs, ep, err := c.fetchIDRanges(ctx, tag, n, prefer)
		if Code(err) != connect.CodeUnimplemented {
			return rs, ep, err
		}
		c.rangesOffUntil.Store(time.Now().Add(rangesRetry).UnixNano())
		c.cfg.logger.Info("seqsvr client: an allocsvr does not serve NextIDRanges; loading with NextIDs", "retry_in", rangesRetry, "err", err)
	}
	ids, ep, err := c.fetchBatch(ctx, tag, n, prefer)
	return toRanges(ids), ep, err
}

// fetchIDRanges is one NextIDRanges call with failover. An answer that
// is not increasing, disjoint ranges is refused as internal (and so
// retried elsewhere) rather than risk a duplicate.
func (c *Client) fetchIDRanges(ctx context.Context, tag string, n int, prefer *endpoint) ([]idRange, *endpoint, error) {
	var rs []idRange
	ep, err := c.do(ctx, "NextIDRanges", prefer, false, func(ctx context.Context, ep *endpoint) error {
		res, err := ep.alloc.NextIDRanges(ctx, connect.NewRequest(&seqsvrv1.NextIDRangesRequest{Tag: tag, Count: int32(n)}))
		if err != nil {
			return err
		}
		got := res.Msg.GetRanges()
		rs = make([]idRange, len(got))
		for i, r := range got {
			rs[i] = idRange{r.GetFirst(), r.GetLast()}
			if rs[i].first > rs[i].last || i > 0 && rs[i].first <= rs[i-1].last {
				return connect.NewError(connect.CodeInternal, fmt.Errorf("NextIDRanges answered ranges out of order: %v", got))
			}
		}
		return nil
	})
	return rs, ep, err
}

// toRanges turns increasing IDs (a NextIDs answer) into runs.
func toRanges(ids []int64) []idRange {
	var out []idRange
	for _, id := range ids {
		if k := len(out) - 1; k >= 0 && out[k].last < id && out[k].last+1 == id {
			out[k].last = id
			continue
		}
		out = append(out, idRange{id, id})
	}
	return out
}

// above is rs without the IDs at or below high.
func above(rs []idRange, high int64) []idRange {
	for len(rs) > 0 && rs[0].last <= high {
		rs = rs[1:]
	}
	if len(rs) > 0 && rs[0].first <= high {
		rs[0].first = high + 1
	}
	return rs
}
