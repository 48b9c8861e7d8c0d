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

// clientWorkers drive segment IDs through the public Go client (package
// client) instead of one allocsvr per call, so its failover (ejection,
// retry on another allocsvr, its deadlines) runs under the nemeses. Each
// worker has its own client with a small local buffer over every
// allocsvr of the start. Their ops are recorded as history.NextIDs ops
// of target "client-N" (life 1): the segment checkers then hold them to
// what the client promises, on top of the servers' guarantees:
//   - unique: no ID a client returns is returned by anyone else, or
//     twice;
//   - within reserved: every ID is at or below its tag's final max_id;
//   - monotonic per target: one client's IDs of a tag increase in real
//     time, through failovers (the local buffer drops what is not above).
const clientWorkers = 2

// clientBuffer is small so the buffer refills (through the failover
// path) often during a run.
const clientBuffer = 20

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
		// The cluster's own HTTP client trusts its CA, presents its
		// certificate and sends a token allowed to call the allocsvrs.
		cl, err := client.New(urls, client.WithHTTPClient(w.c.HTTPClient()), client.WithLocalBuffer(clientBuffer),
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
				w.clientOp(ctx, r, cl, id, target)
			}
		}()
	}
}

// clientOp takes 1..20 IDs of one alloc tag through cl. The deadline is
// a few op timeouts: the client's failover lives inside it.
func (w *workload) clientOp(ctx context.Context, r *rand.Rand, cl *client.Client, id int, target string) {
	tag := w.allocTags[r.Intn(len(w.allocTags))]
	op := &history.Op{Client: id, Kind: history.NextIDs, Tag: tag, Target: target, Life: 1, LifeReturn: 1, Count: 1 + r.Intn(20), Call: w.rec.Now()}
	cctx, cancel := context.WithTimeout(ctx, 3*w.cfg.OpTimeout)
	ids, err := cl.NextIDs(cctx, tag, op.Count)
	cancel()
	op.Return = w.rec.Now()
	if err != nil {
		op.Err, op.Code = err.Error(), client.Code(err).String()
		w.rec.Add(op)
		sleep(ctx, 20*time.Millisecond) // every allocsvr down: do not spin
		return
	}
	op.OK, op.IDs = true, ids
	w.rec.Add(op)
}
