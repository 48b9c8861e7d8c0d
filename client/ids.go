package client

import (
	"context"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// MaxCount is the most IDs, or keys, one call takes.
const MaxCount = spec.MaxCount

// NextID returns the next segment ID of tag: from the local buffer with
// WithLocalBuffer, else from one NextIDs call.
func (c *Client) NextID(ctx context.Context, tag string) (int64, error) {
	// The local buffer's common case, kept free of calls: the last tag
	// asked for, an ID left in its batch, not the one that starts a load.
	if b := c.lastBuf.Load(); b != nil && b.tag == tag {
		if cur := b.cur.Load(); cur != nil {
			i := cur.pos.Add(1) - 1
			if i < cur.n && i != cur.trigger {
				return cur.first + i, nil
			}
			return b.claimed(ctx, cur, i)
		}
	}
	if c.cfg.bufferSize > 0 {
		b, err := c.buffer(tag)
		if err != nil {
			return 0, err
		}
		return b.take(ctx)
	}
	if err := spec.CheckTag(tag); err != nil {
		return 0, connect.NewError(connect.CodeInvalidArgument, err)
	}
	ids, _, err := c.fetchIDs(ctx, tag, 1, nil)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextIDs returns n (1..MaxCount) segment IDs of tag, strictly
// increasing. Without a local buffer they come from one allocsvr in one
// call.
func (c *Client) NextIDs(ctx context.Context, tag string, n int) ([]int64, error) {
	if n < 1 || n > MaxCount {
		return nil, invalid("count %d out of range 1..%d", n, MaxCount)
	}
	if c.cfg.bufferSize > 0 {
		b, err := c.buffer(tag)
		if err != nil {
			return nil, err
		}
		out := make([]int64, 0, n)
		for range n {
			id, err := b.take(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
		return out, nil
	}
	if err := spec.CheckTag(tag); err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	ids, _, err := c.fetchIDs(ctx, tag, n, nil)
	return ids, err
}

// fetchIDs is one NextIDs call with failover, preferring prefer.
func (c *Client) fetchIDs(ctx context.Context, tag string, n int, prefer *endpoint) ([]int64, *endpoint, error) {
	var ids []int64
	ep, err := c.do(ctx, "NextIDs", prefer, false, func(ctx context.Context, ep *endpoint) error {
		res, err := ep.alloc.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag, Count: int32(n)}))
		if err != nil {
			return err
		}
		ids = res.Msg.GetIds()
		return nil
	})
	return ids, ep, err
}

// NextSnowflakeID returns one snowflake ID.
func (c *Client) NextSnowflakeID(ctx context.Context) (int64, error) {
	ids, err := c.NextSnowflakeIDs(ctx, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextSnowflakeIDs returns n (1..MaxCount) snowflake IDs from one
// allocsvr. An allocsvr whose worker lease is lost (failed_precondition)
// is skipped like an unreachable one.
func (c *Client) NextSnowflakeIDs(ctx context.Context, n int) ([]int64, error) {
	if n < 1 || n > MaxCount {
		return nil, invalid("count %d out of range 1..%d", n, MaxCount)
	}
	var ids []int64
	_, err := c.do(ctx, "NextSnowflakeIDs", nil, true, func(ctx context.Context, ep *endpoint) error {
		res, err := ep.alloc.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: int32(n)}))
		if err != nil {
			return err
		}
		ids = res.Msg.GetIds()
		return nil
	})
	return ids, err
}

// Snowflake is what a snowflake ID holds.
type Snowflake struct {
	ID          int64
	Time        time.Time // the millisecond it was issued, UTC
	TimestampMs int64     // Unix milliseconds
	WorkerID    int64
	Sequence    int64
}

// DecodeSnowflake asks an allocsvr to take id apart with the cluster's
// layout (bit widths and epoch are the store's, not fixed here).
func (c *Client) DecodeSnowflake(ctx context.Context, id int64) (Snowflake, error) {
	var out Snowflake
	_, err := c.do(ctx, "DecodeSnowflake", nil, false, func(ctx context.Context, ep *endpoint) error {
		res, err := ep.alloc.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: id}))
		if err != nil {
			return err
		}
		m := res.Msg
		out = Snowflake{ID: id, Time: time.UnixMilli(m.GetTimestampMs()).UTC(), TimestampMs: m.GetTimestampMs(),
			WorkerID: m.GetWorkerId(), Sequence: m.GetSequence()}
		return nil
	})
	return out, err
}
