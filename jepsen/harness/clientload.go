package harness

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/client"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// clientWorkers drive segment IDs and per-key sequences through the
// public Go client (package client) instead of one allocsvr per call, so
// its failover (ejection, retry on another allocsvr, its deadlines) and
// its per-key routing (Routing, calls to each section's owner) run under
// the nemeses. Each worker has its own client over every allocsvr of the
// start, with a small local buffer whose refills are NextIDRanges calls:
// worker 0 over HTTP/2 (history.PathClientH2), worker 1 over HTTP/1.1
// (PathClientH1), where the allocsvrs' front answers NextIDRanges and an
// owner's NextSeq. Their ops are recorded as ops of target "client-N"
// (life 1): the segment checkers then hold them to what the client
// promises, on top of the servers' guarantees:
//   - unique: no ID a client returns is returned by anyone else, or
//     twice;
//   - within reserved: every ID is at or below its tag's final max_id;
//   - monotonic per target: one client's IDs of a tag increase in real
//     time, through failovers (the local buffer drops what is not above).
//
// and the per-key checkers as they hold every call (order in real time,
// unique values, availability).
const clientWorkers = 2

// clientBuffer is small so the buffer refills (through the failover
// path) often during a run.
const clientBuffer = 20

// clientSeqEvery: with per-key workers, one client call in clientSeqEvery
// is a per-key one.
const clientSeqEvery = 3

// clientClientBase numbers the client workers' ops apart from the other
// workers' and the probe's.
const clientClientBase = 1000

// runClientLoad starts the client workers on wg; they stop when ctx ends.
func (w *workload) runClientLoad(ctx context.Context, seed int64, wg *sync.WaitGroup) {
	if w.cfg.AllocWorkers == 0 || len(w.allocTags) == 0 {
		return
	}
	var urls []string
	for _, p := range w.c.Allocs {
		urls = append(urls, p.URL())
	}
	for i := range clientWorkers {
		id := clientClientBase + i
		// The harness's clients trust the run's CA, present its
		// certificate and send a token allowed to call the allocsvrs.
		hc, path := w.tr.allocH2, history.PathClientH2
		if i%2 == 1 {
			hc, path = w.tr.clientH1, history.PathClientH1
		}
		if !w.allowed(path) {
			continue
		}
		cl, err := client.New(urls, client.WithHTTPClient(hc), client.WithLocalBuffer(clientBuffer),
			client.WithAttemptTimeout(w.cfg.OpTimeout))
		if err != nil {
			panic(err) // a programming error: the options are constant
		}
		r := rand.New(rand.NewSource(seed*37 + int64(id)))
		target := fmt.Sprintf("client-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for ctx.Err() == nil {
				if len(w.seqKeys) > 0 && r.Intn(clientSeqEvery) == 0 {
					w.clientSeqOp(ctx, r, cl, id, target, path)
				} else {
					w.clientOp(ctx, r, cl, id, target, path)
				}
			}
		}()
	}
}

// clientOp takes 1..20 IDs of one alloc tag through cl. The deadline is
// a few op timeouts: the client's failover lives inside it.
func (w *workload) clientOp(ctx context.Context, r *rand.Rand, cl *client.Client, id int, target, path string) {
	tag := w.allocTags[r.Intn(len(w.allocTags))]
	op := &history.Op{Client: id, Kind: history.NextIDs, Tag: tag, Target: target, Path: path, Life: 1, LifeReturn: 1, Count: 1 + r.Intn(20), Call: w.rec.Now()}
	cctx, cancel := context.WithTimeout(ctx, 3*w.cfg.OpTimeout)
	ids, err := cl.NextIDs(cctx, tag, op.Count)
	cancel()
	w.clientEnd(ctx, op, err)
	if err == nil {
		op.IDs = ids
	}
	w.rec.Add(op)
}

// clientSeqOp is a NextSeq (half), NextSeqs or CurrentSeqs through cl,
// which sends each key to its section's owner. Over HTTP/1.1 it is always
// a NextSeq, which the owner's front answers: the others are not front
// routes, and their hand-offs would take the client's connections from
// the front.
func (w *workload) clientSeqOp(ctx context.Context, r *rand.Rand, cl *client.Client, id int, target, path string) {
	op := &history.Op{Client: id, Target: target, Path: path, Life: 1, LifeReturn: 1, Space: seqSpace, Call: w.rec.Now()}
	cctx, cancel := context.WithTimeout(ctx, 3*w.cfg.OpTimeout)
	var seqs []int64
	var err error
	switch n := r.Intn(10); {
	case n < 5 || path == history.PathClientH1:
		op.Kind, op.Keys = history.SeqNext, []uint64{w.seqKeys[r.Intn(len(w.seqKeys))]}
		var v int64
		if v, err = cl.NextSeq(cctx, seqSpace, op.Keys[0]); err == nil {
			seqs = []int64{v}
		}
	case n < 8:
		op.Kind, op.Keys = history.SeqNexts, w.pickKeys(r)
		seqs, err = cl.NextSeqs(cctx, seqSpace, op.Keys)
	default:
		op.Kind, op.Keys = history.SeqCurrent, w.pickKeys(r)
		seqs, err = cl.CurrentSeqs(cctx, seqSpace, op.Keys)
	}
	cancel()
	w.clientEnd(ctx, op, err)
	if err == nil {
		op.Seqs = seqs
	}
	w.rec.Add(op)
}

// clientEnd fills in op's return and outcome; after a failure (every
// allocsvr down) it waits a little so the worker does not spin.
func (w *workload) clientEnd(ctx context.Context, op *history.Op, err error) {
	op.Return = w.rec.Now()
	if err != nil {
		op.Err, op.Code = err.Error(), client.Code(err).String()
		sleep(ctx, 20*time.Millisecond)
		return
	}
	op.OK = true
}
