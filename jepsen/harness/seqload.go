package harness

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/cluster"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// The per-key workload runs on one space small enough that every
// allocsvr owns several sections and a joining one takes some: seqKeys
// keys in sections of seqSectionSize. Its workers use Config.SeqHotKeys
// of the keys, spread evenly over the sections, so that every section is
// hot and every move of a section is exercised.
const (
	seqSpace       = "seq"
	seqKeys        = 1000
	seqSectionSize = 100
	// seqFenceMargin is the allocsvrs' --seq-fence-margin.
	seqFenceMargin = 500 * time.Millisecond
	// seqMaxKeys bounds the keys of one NextSeqs or CurrentSeqs.
	seqMaxKeys = 4
)

// seqStoreArgs and seqAllocArgs are the per-key timing flags of a run
// with per-key workers.
func seqStoreArgs(cfg Config) []string { return []string{"--seq-lease-ttl", cfg.SeqLeaseTTL.String()} }

func seqAllocArgs(cfg Config) []string {
	return []string{"--seq-heartbeat-interval", cfg.SeqHeartbeat.String(), "--seq-fence-margin", seqFenceMargin.String()}
}

// createSpace creates the space and waits until every allocsvr serves
// all of keys: the allocsvrs learn of a space from their next heartbeat,
// and the workload should not start with a burst of not_found.
func createSpace(ctx context.Context, c *cluster.Cluster, step int64, keys []uint64) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := c.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: seqSpace, KeyCount: seqKeys, SectionSize: seqSectionSize, Step: step,
		Description: "jepsen per-key workload"})
	if err != nil {
		return err
	}
	for _, a := range c.Allocs {
		for {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := c.SeqClient(a).CurrentSeqs(cctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: seqSpace, Keys: keys}))
			ccancel()
			if err == nil {
				break
			}
			if cluster.Sleep(ctx, 50*time.Millisecond) != nil {
				return fmt.Errorf("space %s not served by %s: %w", seqSpace, a.Name, err)
			}
		}
	}
	return nil
}

// hotKeys spreads n keys evenly over the space.
func hotKeys(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i * seqKeys / n)
	}
	return out
}

// pickKeys draws 1..seqMaxKeys hot keys; repeats are allowed, as they are
// in NextSeqs.
func (w *workload) pickKeys(r *rand.Rand) []uint64 {
	keys := make([]uint64, 1+r.Intn(seqMaxKeys))
	for i := range keys {
		keys[i] = w.seqKeys[r.Intn(len(w.seqKeys))]
	}
	return keys
}

// seqOp is a NextSeq (half of the calls), a NextSeqs (3 in 10) or a
// CurrentSeqs on p. It reports whether the call succeeded.
func (w *workload) seqOp(ctx context.Context, r *rand.Rand, client int, p *cluster.Proc) bool {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	switch n := r.Intn(10); {
	case n < 5:
		return w.seqCall(cctx, client, p, history.SeqNext, []uint64{w.seqKeys[r.Intn(len(w.seqKeys))]}).OK
	case n < 8:
		return w.seqCall(cctx, client, p, history.SeqNexts, w.pickKeys(r)).OK
	default:
		return w.seqCall(cctx, client, p, history.SeqCurrent, w.pickKeys(r)).OK
	}
}

// seqCall makes one per-key call of kind on p and records it; any error
// leaves its outcome unknown (the checkers ignore it).
func (w *workload) seqCall(ctx context.Context, client int, p *cluster.Proc, kind string, keys []uint64) *history.Op {
	op := w.begin(client, kind, "", p)
	op.Space, op.Keys = seqSpace, keys
	cli := w.c.SeqClient(p)
	var err error
	switch kind {
	case history.SeqNext:
		var resp *connect.Response[seqsvrv1.NextSeqResponse]
		if resp, err = cli.NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: seqSpace, Key: keys[0]})); err == nil {
			op.Seqs = []int64{resp.Msg.GetSeq()}
		}
	case history.SeqNexts:
		var resp *connect.Response[seqsvrv1.NextSeqsResponse]
		if resp, err = cli.NextSeqs(ctx, connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: seqSpace, Keys: keys})); err == nil {
			op.Seqs = resp.Msg.GetSeqs()
		}
	default:
		var resp *connect.Response[seqsvrv1.CurrentSeqsResponse]
		if resp, err = cli.CurrentSeqs(ctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: seqSpace, Keys: keys})); err == nil {
			op.Seqs = resp.Msg.GetSeqs()
		}
	}
	w.end(op, p, err)
	return op
}

// seqFinal reads every hot key once the cluster is healed, through each
// allocsvr in turn until one answers: recorded like any call, the read
// must be at least every NextSeq answered during the run, so the order
// checker also checks what survived the faults.
func (w *workload) seqFinal(ctx context.Context, client int) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last *history.Op
	for i := 0; ctx.Err() == nil; i++ {
		p := w.c.Allocs[i%len(w.c.Allocs)]
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		last = w.seqCall(cctx, client, p, history.SeqCurrent, w.seqKeys)
		ccancel()
		if last.OK {
			return ""
		}
		sleep(ctx, 200*time.Millisecond)
	}
	if last == nil {
		return "final per-key read not made"
	}
	return fmt.Sprintf("final per-key read: no allocsvr answered within 30 s (last: %s: %s)", last.Target, last.Err)
}
