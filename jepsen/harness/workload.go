package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/cluster"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// workload drives client operations and records each one.
type workload struct {
	cfg   Config
	c     *cluster.Cluster
	rec   *history.Recorder
	runID string

	linTags, allocTags []string

	mu     sync.Mutex
	allocs []*cluster.Proc // the allocsvrs clients may call (twins come and go)
}

func (w *workload) addAlloc(p *cluster.Proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.allocs = append(w.allocs, p)
}

func (w *workload) removeAlloc(p *cluster.Proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, q := range w.allocs {
		if q == p {
			w.allocs = append(w.allocs[:i], w.allocs[i+1:]...)
			return
		}
	}
}

func (w *workload) pickAlloc(r *rand.Rand) *cluster.Proc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.allocs[r.Intn(len(w.allocs))]
}

func (w *workload) pickStore(r *rand.Rand) *cluster.Proc {
	var up []*cluster.Proc
	for _, s := range w.c.Stores {
		if s.Running() {
			up = append(up, s)
		}
	}
	if len(up) == 0 {
		return w.c.Stores[r.Intn(len(w.c.Stores))]
	}
	return up[r.Intn(len(up))]
}

// run starts the workers; they stop when ctx ends.
func (w *workload) run(ctx context.Context, seed int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := 0
	for range w.cfg.StoreWorkers {
		id := client
		client++
		r := rand.New(rand.NewSource(seed*31 + int64(id)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if !w.storeOp(ctx, r, id, w.pickStore(r)) {
					// Back off a little: a refused connection fails in
					// microseconds, and thousands of failed reservations
					// only add unknowns to resolve, not coverage.
					sleep(ctx, 10*time.Millisecond)
				}
			}
		}()
	}
	for range w.cfg.AllocWorkers {
		id := client
		client++
		r := rand.New(rand.NewSource(seed*31 + int64(id)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				w.allocOp(ctx, r, id, w.pickAlloc(r))
			}
		}()
	}
	return &wg
}

func (w *workload) begin(client int, kind string, p *cluster.Proc) *history.Op {
	return &history.Op{Client: client, Kind: kind, Target: p.Name, Life: p.Starts(), Pid: p.Pid(), Call: w.rec.Now()}
}

func (w *workload) end(op *history.Op, p *cluster.Proc, err error) {
	op.Return = w.rec.Now()
	op.LifeReturn = p.Starts()
	if err != nil {
		op.OK = false
		op.Err = err.Error()
		op.Code = connect.CodeOf(err).String()
		var ne *net.OpError
		op.NotSent = errors.As(err, &ne) && ne.Op == "dial"
	} else {
		op.OK = true
	}
	w.rec.Add(op)
}

// storeOp: a ReserveSegment (with a request_id) or a GetTag on a lin tag.
// It reports whether the call succeeded.
func (w *workload) storeOp(ctx context.Context, r *rand.Rand, client int, p *cluster.Proc) bool {
	tag := w.linTags[r.Intn(len(w.linTags))]
	cli := w.c.StoreClient(p)
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	if r.Intn(10) < 6 {
		op := w.begin(client, history.Reserve, p)
		op.Tag, op.Size = tag, int64(1+r.Intn(5))
		op.RequestID = fmt.Sprintf("%s-c%d-%d", w.runID, client, r.Int63())
		resp, err := cli.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: tag, Size: op.Size, RequestId: op.RequestID}))
		if err == nil {
			op.First, op.Last = resp.Msg.GetFirst(), resp.Msg.GetLast()
		}
		w.end(op, p, err)
		return err == nil
	}
	return w.get(cctx, client, p, tag)
}

func (w *workload) get(ctx context.Context, client int, p *cluster.Proc, tag string) bool {
	op := w.begin(client, history.GetTag, p)
	op.Tag = tag
	resp, err := w.c.StoreClient(p).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: tag}))
	if err == nil {
		op.MaxID = resp.Msg.GetMaxId()
	}
	w.end(op, p, err)
	return err == nil
}

// probe aims a burst of reads at a member just resumed from a pause: if
// it serves reads without checking it still leads, they are stale.
func (w *workload) probe(p *cluster.Proc, client int) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, tag := range w.linTags {
		wg.Add(1)
		go func() { defer wg.Done(); w.get(ctx, client+i, p, tag) }()
	}
	wg.Wait()
}

// allocOp: NextIDs on an alloc tag or NextSnowflakeIDs.
func (w *workload) allocOp(ctx context.Context, r *rand.Rand, client int, p *cluster.Proc) {
	cli := w.c.AllocClient(p)
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	count := 1 + r.Intn(20)
	if r.Intn(2) == 0 {
		op := w.begin(client, history.NextIDs, p)
		op.Tag, op.Count = w.allocTags[r.Intn(len(w.allocTags))], count
		resp, err := cli.NextIDs(cctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: op.Tag, Count: int32(count)}))
		if err == nil {
			op.IDs = resp.Msg.GetIds()
		}
		w.end(op, p, err)
	} else {
		op := w.begin(client, history.Snowflake, p)
		op.Count = count
		resp, err := cli.NextSnowflakeIDs(cctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: int32(count)}))
		if err == nil {
			op.IDs = resp.Msg.GetIds()
		}
		w.end(op, p, err)
	}
	if ctx.Err() == nil && !p.Running() {
		// Do not spin on a dead process.
		time.Sleep(20 * time.Millisecond)
	}
}

// resolveParallel bounds the concurrent re-issues of resolve: enough to
// learn thousands of outcomes in seconds, few enough not to overload a
// 2-core box's three members.
const resolveParallel = 16

// resolve learns the outcome of every reservation that failed or timed
// out by re-issuing it with the same request_id: the store answers a
// retried request_id with the segment it reserved the first time, or
// reserves it now; either way the operation took effect between its call
// and the re-issue's return. Re-issues run resolveParallel at a time.
// Calls that never left the client (NotSent) are left alone. Each op
// re-issued ends Resolved or Unresolved, which is what the report counts.
func (w *workload) resolve(ctx context.Context, ops []*history.Op) {
	todo := make(chan *history.Op)
	var wg sync.WaitGroup
	for i := range resolveParallel {
		r := rand.New(rand.NewSource(int64(i) + 1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range todo {
				w.resolveOne(ctx, r, op)
			}
		}()
	}
	for _, op := range ops {
		if op.Kind == history.Reserve && !op.OK && !op.NotSent {
			todo <- op
		}
	}
	close(todo)
	wg.Wait()
}

func (w *workload) resolveOne(ctx context.Context, r *rand.Rand, op *history.Op) {
	for attempt := 0; ; attempt++ {
		p := w.pickStore(r)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := w.c.StoreClient(p).ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: op.Tag, Size: op.Size, RequestId: op.RequestID}))
		cancel()
		if err == nil {
			op.OK, op.Resolved = true, true
			op.First, op.Last = resp.Msg.GetFirst(), resp.Msg.GetLast()
			op.Return = w.rec.Now()
			return
		}
		if attempt >= 20 || ctx.Err() != nil || errors.Is(err, context.Canceled) {
			op.Unresolved = true
			op.Err += "; resolve: " + err.Error()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
