package harness

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
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
	// seqFenceMargin is the allocsvrs' default --seq-fence-margin
	// (Config.SeqFenceMargin).
	seqFenceMargin = 500 * time.Millisecond
	// seqMaxKeys bounds the keys of one NextSeqs or CurrentSeqs.
	seqMaxKeys = 4
)

// seqStoreArgs and seqAllocArgs are the per-key timing flags of a run
// with per-key workers.
func seqStoreArgs(cfg Config) []string { return []string{"--seq-lease-ttl", cfg.SeqLeaseTTL.String()} }

func seqAllocArgs(cfg Config) []string {
	return []string{"--seq-heartbeat-interval", cfg.SeqHeartbeat.String(), "--seq-fence-margin", cfg.SeqFenceMargin.String()}
}

// createSpace creates the space and waits until every allocsvr serves
// all of keys: the allocsvrs learn of a space from their next heartbeat,
// and the workload should not start with a burst of not_found.
func createSpace(ctx context.Context, c *launch.Cluster, step int64, keys []uint64) error {
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
			if launch.Sleep(ctx, 50*time.Millisecond) != nil {
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
// CurrentSeqs on p, over a serving path of pickPath; a Leaf call is a
// GET of one key's next value (4 in 5) or current value. It reports
// whether the call succeeded.
func (w *workload) seqOp(ctx context.Context, r *rand.Rand, client int, p *launch.Proc) bool {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	path := w.pickPath(r)
	if path == history.PathLeafH1 || path == history.PathLeafH2 {
		kind := history.SeqNext
		if r.Intn(5) == 0 {
			kind = history.SeqCurrent
		}
		return w.seqLeaf(cctx, client, p, path, kind, w.seqKeys[r.Intn(len(w.seqKeys))]).OK
	}
	switch n := r.Intn(10); {
	case n < 5:
		return w.seqCallVia(cctx, client, p, path, history.SeqNext, []uint64{w.seqKeys[r.Intn(len(w.seqKeys))]}).OK
	case n < 8:
		return w.seqCallVia(cctx, client, p, path, history.SeqNexts, w.pickKeys(r)).OK
	default:
		return w.seqCallVia(cctx, client, p, path, history.SeqCurrent, w.pickKeys(r)).OK
	}
}

// seqCall makes one per-key call of kind on p and records it; any error
// leaves its outcome unknown (the checkers ignore it).
func (w *workload) seqCall(ctx context.Context, client int, p *launch.Proc, kind string, keys []uint64) *history.Op {
	return w.seqCallVia(ctx, client, p, history.PathH2, kind, keys)
}

// seqCallVia is seqCall over a Connect path (PathH2 or PathH1).
func (w *workload) seqCallVia(ctx context.Context, client int, p *launch.Proc, path, kind string, keys []uint64) *history.Op {
	op := w.begin(client, kind, "", p)
	op.Space, op.Keys, op.Path = seqSpace, keys, path
	cli := w.c.SeqClient(p)
	if path == history.PathH1 {
		// NextSeq is the front's route; the others it hands off.
		cli = w.tr.seqClientH1(p, seqPool(kind))
	}
	var err error
	switch kind {
	case history.SeqNext:
		var resp *connect.Response[seqsvrv1.NextSeqResponse]
		if resp, err = cli.NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: seqSpace, Key: keys[0]})); err == nil {
			op.Seqs, op.RoutingVersion = []int64{resp.Msg.GetSeq()}, resp.Msg.GetRoutingVersion()
		}
	case history.SeqNexts:
		var resp *connect.Response[seqsvrv1.NextSeqsResponse]
		if resp, err = cli.NextSeqs(ctx, connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: seqSpace, Keys: keys})); err == nil {
			op.Seqs, op.RoutingVersion = resp.Msg.GetSeqs(), resp.Msg.GetRoutingVersion()
		}
	default:
		var resp *connect.Response[seqsvrv1.CurrentSeqsResponse]
		if resp, err = cli.CurrentSeqs(ctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: seqSpace, Keys: keys})); err == nil {
			op.Seqs, op.RoutingVersion = resp.Msg.GetSeqs(), resp.Msg.GetRoutingVersion()
		}
	}
	w.end(op, p, err)
	return op
}

// seqPool is the HTTP/1.1 pool of a per-key call: NextSeq and the next
// GET are the front's routes.
func seqPool(kind string) int {
	if kind == history.SeqNext {
		return poolSeq
	}
	return poolOther
}

// seqLeaf is GET /api/seq/next/{space}/{key} (kind SeqNext) or
// /api/seq/current/... (SeqCurrent) over a Leaf path, recorded as the
// one-key call it is.
func (w *workload) seqLeaf(ctx context.Context, client int, p *launch.Proc, path, kind string, key uint64) *history.Op {
	op := w.begin(client, kind, "", p)
	op.Space, op.Keys, op.Path = seqSpace, []uint64{key}, path
	verb := "next"
	if kind == history.SeqCurrent {
		verb = "current"
	}
	v, err := w.leafGet(ctx, p, path, fmt.Sprintf("/api/seq/%s/%s/%d", verb, seqSpace, key), seqPool(kind))
	if err == nil {
		op.Seqs = []int64{v}
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

// Guarantee 9 reads the nemesis log: which allocsvr events it speaks of
// (deaths, graceful stops, starts), which allocsvrs were down (their own
// failures say nothing about keys), and which faults it does not speak of
// (store faults, partitions, clock steps, twins), excused with a recovery
// allowance of one lease TTL plus checker.SeqBlip after their heal.
var (
	// seqDeaths stop an allocsvr without a release: its sections move
	// after its lease expires. A rollback to the base release counts
	// here: the base binary cannot read the newer data-dir files, so it
	// comes back as a new instance of the same node-id and waits out the
	// old instance's lease (docs/upgrading.md, "Rolling back"); a clean
	// machine's upgrade smoke showed a 5.3 s gap after it with a 5 s TTL.
	seqDeaths = []string{"seq-kill-alloc", "kill-alloc", "seq-pause-alloc", "pause-alloc", "isolate-alloc", rollbackAlloc}
	// seqGraceful stop one with a release (SIGTERM; the upgrade's swap
	// too).
	seqGraceful = []string{"seq-term-alloc", upgradeAlloc}
	// seqAdds start the extra allocsvr and stop it again.
	seqAdds = []string{"seq-add-alloc", "seq-add-alloc-aimed"}
)

// SeqAvailability is checker.SeqAvailability on a run's history and
// nemesis log, with the stores' --seq-lease-ttl.
func SeqAvailability(ops []*history.Op, events []nemesis.Event, ttl time.Duration) checker.Result {
	scale, excused, down := seqG9Events(events, ttl)
	return checker.SeqAvailability(ops, scale, excused, down)
}

// seqG9Events sorts the nemesis log into guarantee 9's allocsvr events,
// excused spans and down spans by target.
func seqG9Events(events []nemesis.Event, ttl time.Duration) ([]checker.SeqScale, []checker.Span, map[string][]checker.Span) {
	const end = time.Duration(math.MaxInt64)
	death := ttl + checker.SeqBlip
	type open struct {
		fault, target string
		at            time.Duration
	}
	var (
		scale   []checker.SeqScale
		excused []checker.Span
		opened  []open
	)
	down := map[string][]checker.Span{}
	closeSpan := func(o open, at time.Duration) {
		switch {
		case slices.Contains(seqDeaths, o.fault), slices.Contains(seqGraceful, o.fault):
			down[o.target] = append(down[o.target], checker.Span{From: o.at, To: at})
		case slices.Contains(seqAdds, o.fault):
			// The extra allocsvr is up between inject and heal; after
			// the heal it is gone for good.
			down[o.target] = append(down[o.target], checker.Span{From: at, To: end})
		default:
			to := end
			if at < end {
				to = at + death
			}
			excused = append(excused, checker.Span{From: o.at, To: to})
			down[o.target] = append(down[o.target], checker.Span{From: o.at, To: to})
		}
	}
	for _, e := range events {
		what := e.Fault + " " + e.Target
		switch e.Phase {
		case "inject":
			opened = append(opened, open{e.Fault, e.Target, e.At})
			switch {
			case slices.Contains(seqDeaths, e.Fault):
				scale = append(scale, checker.SeqScale{At: e.At, Bound: death, What: what, Target: e.Target})
			case slices.Contains(seqGraceful, e.Fault), slices.Contains(seqAdds, e.Fault):
				scale = append(scale, checker.SeqScale{At: e.At, Bound: checker.SeqBlip, What: what, Target: e.Target})
			}
		case "heal":
			if e.Fault == "twin-takeover" && e.Detail == nemesis.TwinReconnected {
				// Not the end: the twin serves, then dies with its
				// sections held; the final heal (original restarted)
				// closes the fault, and recovery is allowed after it.
				continue
			}
			// This heal ends its own injection and any later one of the
			// same fault (a twin's second step).
			keep := opened[:0]
			first := -1
			for i, o := range opened {
				if o.fault == e.Fault && o.target == e.Target && first < 0 {
					first = i
				}
			}
			for i, o := range opened {
				if o.fault == e.Fault && first >= 0 && i >= first {
					closeSpan(o, e.At)
					continue
				}
				keep = append(keep, o)
			}
			opened = keep
			switch {
			case slices.Contains(seqAdds, e.Fault) && strings.Contains(e.Detail, "SIGKILL"):
				scale = append(scale, checker.SeqScale{At: e.At, Bound: death, What: what + " SIGKILL", Target: e.Target})
			case slices.Contains(seqDeaths, e.Fault), slices.Contains(seqGraceful, e.Fault), slices.Contains(seqAdds, e.Fault):
				// A restart, a SIGCONT, a reconnection or a SIGTERM: sections
				// move to or away from it, within the blip.
				scale = append(scale, checker.SeqScale{At: e.At, Bound: checker.SeqBlip, What: what, Target: e.Target})
			}
		}
	}
	for _, o := range opened {
		closeSpan(o, end)
	}
	return scale, excused, down
}
