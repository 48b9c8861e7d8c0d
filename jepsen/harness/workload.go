package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// workload drives client operations and records each one.
type workload struct {
	cfg   Config
	c     *launch.Cluster
	tr    *transports // the HTTP/1.1 and HTTP/2 clients of the serving paths (paths.go)
	rec   *history.Recorder
	runID string

	linTags, allocTags []string
	// soloTags maps an original allocsvr's name to the tag only it is
	// asked for (checker.NoBurnedIDs).
	soloTags map[string]string
	// lifeTags are created, updated and deleted by the tag workers;
	// starts numbers their creates.
	lifeTags []string
	starts   atomic.Int64
	// open counts each life tag's writes of unknown outcome (see
	// maxOpenWrites).
	open sync.Map // tag -> *atomic.Int32
	// seqKeys are the per-key workers' hot keys (hotKeys).
	seqKeys []uint64

	mu     sync.Mutex
	allocs []*launch.Proc // the allocsvrs clients may call (twins come and go)

	// recent are successful reservations whose request_ids the store
	// workers re-send later (resendLater); nemesisClients numbers the
	// calls the nemesis makes (each a porcupine client of its own).
	recentMu       sync.Mutex
	recent         []*history.Op
	nemesisClients atomic.Int64

	// lastSnow is each allocsvr's largest snowflake ID in its latest
	// lifetime (the aimed restarts read its timestamp); layout decodes it.
	snowMu   sync.Mutex
	lastSnow map[*launch.Proc]snowMark
	layout   Layout
}

type snowMark struct {
	life int
	id   int64
}

func (w *workload) noteSnowflake(op *history.Op, p *launch.Proc) {
	if !op.OK || len(op.IDs) == 0 || op.Life != op.LifeReturn {
		return
	}
	w.snowMu.Lock()
	defer w.snowMu.Unlock()
	if w.lastSnow == nil {
		w.lastSnow = map[*launch.Proc]snowMark{}
	}
	m := w.lastSnow[p]
	if m.life != op.Life {
		m = snowMark{life: op.Life}
	}
	m.id = max(m.id, slices.Max(op.IDs))
	w.lastSnow[p] = m
}

// lastSnowflakeMs is Env.LastSnowflakeMs: the timestamp of the largest
// snowflake ID p's latest lifetime (with answers) returned.
func (w *workload) lastSnowflakeMs(p *launch.Proc) (int64, bool) {
	w.snowMu.Lock()
	m, ok := w.lastSnow[p]
	ly := w.layout
	w.snowMu.Unlock()
	if !ok || m.id == 0 {
		return 0, false
	}
	if ly.From == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ly = snowflakeLayout(ctx, w.c)
		cancel()
		if ly.From == "" {
			return 0, false
		}
		w.snowMu.Lock()
		w.layout = ly
		w.snowMu.Unlock()
	}
	return m.id>>(ly.WorkerBits+ly.SequenceBits) + ly.EpochMs, true
}

// How the store workers re-send request_ids on purpose: one successful
// reservation in resendAtOnce is re-sent at once to another member; one
// store call in resendLater re-sends a random one of the last
// recentCap successful reservations.
const (
	resendAtOnce = 8
	resendLater  = 15
	recentCap    = 256
)

func (w *workload) addAlloc(p *launch.Proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.allocs = append(w.allocs, p)
}

func (w *workload) removeAlloc(p *launch.Proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.allocs = slices.DeleteFunc(w.allocs, func(q *launch.Proc) bool { return q == p })
}

// procs are the stores and every allocsvr clients may call now.
func (w *workload) procs() []*launch.Proc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(append([]*launch.Proc{}, w.c.Stores...), w.allocs...)
}

func (w *workload) pickAlloc(r *rand.Rand) *launch.Proc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.allocs[r.Intn(len(w.allocs))]
}

// pickRunningAlloc prefers an allocsvr that runs (possibly paused): a
// call to a dead one is refused in microseconds and proves nothing.
func (w *workload) pickRunningAlloc(r *rand.Rand) *launch.Proc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return pickRunning(r, w.allocs)
}

func (w *workload) pickStore(r *rand.Rand) *launch.Proc { return pickRunning(r, w.c.Stores) }

// pickRunning picks one of the running procs, or any when none runs.
func pickRunning(r *rand.Rand, procs []*launch.Proc) *launch.Proc {
	var up []*launch.Proc
	for _, p := range procs {
		if p.Running() {
			up = append(up, p)
		}
	}
	if len(up) == 0 {
		return procs[r.Intn(len(procs))]
	}
	return up[r.Intn(len(up))]
}

// run starts the workers; they stop when ctx ends. Client numbers: store
// workers, then alloc workers, then tag workers, then per-key workers.
func (w *workload) run(ctx context.Context, seed int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := 0
	spawn := func(n int, step func(r *rand.Rand, id int)) {
		for range n {
			id := client
			client++
			r := rand.New(rand.NewSource(seed*31 + int64(id)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					step(r, id)
				}
			}()
		}
	}
	spawn(w.cfg.StoreWorkers, func(r *rand.Rand, id int) {
		if !w.storeOp(ctx, r, id, w.pickStore(r)) {
			// Back off a little: a refused connection fails in
			// microseconds, and thousands of failed reservations only
			// add unknowns to resolve, not coverage.
			sleep(ctx, 10*time.Millisecond)
		}
	})
	spawn(w.cfg.AllocWorkers, func(r *rand.Rand, id int) { w.allocOp(ctx, r, id, w.pickAlloc(r)) })
	spawn(w.cfg.TagWorkers, func(r *rand.Rand, id int) {
		if w.tagOp(ctx, r, id, w.pickStore(r)) {
			sleep(ctx, tagOpGap)
		} else {
			sleep(ctx, tagBackoff)
		}
	})
	spawn(w.cfg.SeqWorkers, func(r *rand.Rand, id int) {
		if !w.seqOp(ctx, r, id, w.pickRunningAlloc(r)) {
			// No owner yet, or a dead allocsvr: do not spin.
			sleep(ctx, 10*time.Millisecond)
		}
	})
	w.runClientLoad(ctx, seed, &wg) // clientload.go: IDs through package client
	return &wg
}

func (w *workload) begin(client int, kind, tag string, p *launch.Proc) *history.Op {
	return &history.Op{Client: client, Kind: kind, Tag: tag, Target: p.Name, Path: history.PathH2, Life: p.Starts(), Pid: p.Pid(), Call: w.rec.Now()}
}

func (w *workload) end(op *history.Op, p *launch.Proc, err error) {
	op.Return = w.rec.Now()
	op.LifeReturn = p.Starts()
	if err != nil {
		op.OK = false
		op.Err = err.Error()
		op.Code = connect.CodeOf(err).String()
		var ne *net.OpError
		op.NotSent = errors.As(err, &ne) && ne.Op == "dial"
		op.Refused = refused(op.Err)
	} else {
		op.OK = true
	}
	w.rec.Add(op)
}

// refusals are the store's answers that say it proposed nothing: the
// member asked knew no leader (storage.ErrNoLeader), a forwarded call
// reached a member that no longer led (storage.ErrNotLeader), or the call,
// or the member's forward of it, failed to connect. Only the error text
// tells them apart from the unavailable answers that may have committed.
var refusals = []string{"no raft leader", "not the raft leader", "unavailable: dial tcp"}

func refused(msg string) bool {
	return slices.ContainsFunc(refusals, func(r string) bool { return strings.Contains(msg, r) })
}

// storeOp: a ReserveSegment (with a request_id) or a GetTag on a lin tag,
// or, one call in storeReadEvery, another store read (storeRead). It
// reports whether the call succeeded.
func (w *workload) storeOp(ctx context.Context, r *rand.Rand, client int, p *launch.Proc) bool {
	if r.Intn(storeReadEvery) == 0 {
		return w.storeRead(ctx, r, client) // reads.go
	}
	tag := w.linTags[r.Intn(len(w.linTags))]
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	if r.Intn(resendLater) == 0 {
		if old := w.pickRecent(r); old != nil {
			return w.resend(cctx, client, p, old, "later").OK
		}
	}
	if r.Intn(10) < 6 {
		path := history.PathH2
		if r.Intn(100) < storeShareH1 && w.allowed(history.PathH1) {
			path = history.PathH1 // the store's front answers it on the leader
		}
		op := w.reserveVia(cctx, r, client, p, tag, int64(1+r.Intn(5)), path)
		if op.OK {
			w.remember(r, op)
			if r.Intn(resendAtOnce) == 0 {
				w.resend(cctx, client, w.pickStore(r), op, "")
			}
		}
		return op.OK
	}
	return w.get(cctx, client, p, tag).OK
}

func (w *workload) remember(r *rand.Rand, op *history.Op) {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	if len(w.recent) < recentCap {
		w.recent = append(w.recent, op)
	} else {
		w.recent[r.Intn(recentCap)] = op
	}
}

func (w *workload) pickRecent(r *rand.Rand) *history.Op {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	if len(w.recent) == 0 {
		return nil
	}
	return w.recent[r.Intn(len(w.recent))]
}

// resend re-sends orig's request_id, tag and size (history.Resend): the
// store must answer orig's segment and reserve nothing.
func (w *workload) resend(ctx context.Context, client int, p *launch.Proc, orig *history.Op, across string) *history.Op {
	op := w.begin(client, history.Resend, orig.Tag, p)
	op.Size, op.RequestID, op.Across = orig.Size, orig.RequestID, across
	resp, err := w.c.StoreClient(p).ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: orig.Tag, Size: orig.Size, RequestId: orig.RequestID}))
	if err == nil {
		op.First, op.Last, op.TagStep = resp.Msg.GetFirst(), resp.Msg.GetLast(), resp.Msg.GetStep()
	}
	w.end(op, p, err)
	return op
}

// nemesisReserve is a reservation the nemesis makes on a lin tag (to aim
// a fault at it), recorded like the store workers' under a client number
// of its own.
func (w *workload) nemesisReserve(ctx context.Context, p *launch.Proc) *history.Op {
	client := nemesisClientBase + int(w.nemesisClients.Add(1))
	r := rand.New(rand.NewSource(int64(client)))
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	return w.reserve(cctx, r, client, p, w.linTags[r.Intn(len(w.linTags))], int64(1+r.Intn(5)))
}

// nemesisResend re-sends orig for the nemesis (see resend).
func (w *workload) nemesisResend(ctx context.Context, p *launch.Proc, orig *history.Op, across string) *history.Op {
	client := nemesisClientBase + int(w.nemesisClients.Add(1))
	cctx, cancel := context.WithTimeout(ctx, 2*w.cfg.OpTimeout)
	defer cancel()
	return w.resend(cctx, client, p, orig, across)
}

// nemesisSnowflake is Env.Snowflake: one snowflake ID through p over
// connect-go and HTTP/2, with a short deadline, so a probe of a process
// that stopped answering does not hold the window up.
func (w *workload) nemesisSnowflake(ctx context.Context, p *launch.Proc) *history.Op {
	client := nemesisClientBase + int(w.nemesisClients.Add(1))
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	op := w.begin(client, history.Snowflake, "", p)
	op.Count, op.Path = 1, history.PathH2
	resp, err := w.c.AllocClient(p).NextSnowflakeIDs(cctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 1}))
	if err == nil {
		op.IDs = resp.Msg.GetIds()
	}
	w.end(op, p, err)
	w.noteSnowflake(op, p)
	return op
}

// probeTimeout bounds one probe of Env.Snowflake.
const probeTimeout = 300 * time.Millisecond

// nemesisClientBase numbers the nemesis's calls above every worker's.
const nemesisClientBase = 1_000_000

// reserve is a ReserveSegment with a fresh request_id, so that resolve can
// learn its outcome if it is unknown.
func (w *workload) reserve(ctx context.Context, r *rand.Rand, client int, p *launch.Proc, tag string, size int64) *history.Op {
	return w.reserveVia(ctx, r, client, p, tag, size, history.PathH2)
}

// reserveVia is reserve over path (PathH2 or PathH1).
func (w *workload) reserveVia(ctx context.Context, r *rand.Rand, client int, p *launch.Proc, tag string, size int64, path string) *history.Op {
	op := w.begin(client, history.Reserve, tag, p)
	op.Size, op.Path = size, path
	op.RequestID = fmt.Sprintf("%s-c%d-%d", w.runID, client, r.Int63())
	cli := w.c.StoreClient(p)
	if path == history.PathH1 {
		cli = w.tr.storeClientH1(p)
	}
	resp, err := cli.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: tag, Size: size, RequestId: op.RequestID}))
	if err == nil {
		op.First, op.Last, op.TagStep = resp.Msg.GetFirst(), resp.Msg.GetLast(), resp.Msg.GetStep()
	}
	w.end(op, p, err)
	return op
}

func (w *workload) get(ctx context.Context, client int, p *launch.Proc, tag string) *history.Op {
	op := w.begin(client, history.GetTag, tag, p)
	resp, err := w.c.StoreClient(p).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: tag}))
	if err == nil {
		op.MaxID, op.TagStep = resp.Msg.GetMaxId(), resp.Msg.GetStep()
	}
	w.end(op, p, err)
	return op
}

// tagOpGap spaces one tag worker's calls: the life tags get a modest rate.
// After a call without an answer (the cluster is failing over, or the
// member is down), the worker waits tagBackoff: every tag write of
// unknown outcome stays open to the end of the history, and porcupine must
// try it at every point after its call.
const (
	tagOpGap   = 20 * time.Millisecond
	tagBackoff = 500 * time.Millisecond
)

// maxOpenWrites bounds the writes of unknown outcome per life tag: once a
// tag has that many, its workers only reserve on it and read it. Porcupine
// may have to try each subset of a tag's open writes, so this keeps its
// search small however many faults the run injects.
const maxOpenWrites = 10

func (w *workload) openWrites(tag string) *atomic.Int32 {
	n, _ := w.open.LoadOrStore(tag, new(atomic.Int32))
	return n.(*atomic.Int32)
}

// lifeSteps are the steps tag writes set; UpdateTag's 0 keeps the step.
var lifeSteps = []int64{0, 10, 20, 30}

// tagOp is one call of a tag's life cycle on a life tag: CreateTag,
// UpdateTag, DeleteTag (half of the calls, see tagWrite, while the tag has
// fewer than maxOpenWrites open ones), a ReserveSegment of the tag's step
// (size 0) or a GetTag; or, one call in tagListEvery, a ListTags listing
// among those creates and deletes. It reports whether the call was
// answered (success, not_found or already_exists).
func (w *workload) tagOp(ctx context.Context, r *rand.Rand, client int, p *launch.Proc) bool {
	if r.Intn(tagListEvery) == 0 {
		return w.listing(ctx, r, client, history.ListTags, w.pickStore).OK // reads.go
	}
	tag := w.lifeTags[r.Intn(len(w.lifeTags))]
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	var op *history.Op
	open := w.openWrites(tag)
	switch n := r.Intn(10); {
	case n < 5 && open.Load() < maxOpenWrites:
		if op = w.tagWrite(cctx, r, client, p, tag); op.Open() {
			open.Add(1)
		}
	case n < 8:
		op = w.reserve(cctx, r, client, p, tag, 0)
	default:
		op = w.get(cctx, client, p, tag)
	}
	return op.OK || op.Answered()
}

// tagWrite is a CreateTag (2 in 5), an UpdateTag (2 in 5) or a DeleteTag.
// Each create uses a start no other create uses, n<<32, above every
// earlier life's max_id: every life hands out IDs from a range of its own
// and its answered max_id tells which create took effect. (The store would
// continue above the tombstone anyway, guarantee 7; the model expects
// max(start, tombstone).)
func (w *workload) tagWrite(ctx context.Context, r *rand.Rand, client int, p *launch.Proc, tag string) *history.Op {
	cli := w.c.StoreClient(p)
	var op *history.Op
	var resp *connect.Response[seqsvrv1.Tag]
	var err error
	switch n := r.Intn(5); {
	case n < 2:
		op = w.begin(client, history.Create, tag, p)
		op.Start, op.Step = w.starts.Add(1)<<32, lifeSteps[1+r.Intn(len(lifeSteps)-1)]
		resp, err = cli.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: tag, Start: op.Start, Step: op.Step}))
	case n < 4:
		op = w.begin(client, history.Update, tag, p)
		op.Step = lifeSteps[r.Intn(len(lifeSteps))]
		resp, err = cli.UpdateTag(ctx, connect.NewRequest(&seqsvrv1.UpdateTagRequest{Tag: tag, Step: op.Step}))
	default:
		op = w.begin(client, history.Delete, tag, p)
		_, err = cli.DeleteTag(ctx, connect.NewRequest(&seqsvrv1.DeleteTagRequest{Tag: tag}))
	}
	if err == nil && resp != nil {
		op.MaxID, op.TagStep = resp.Msg.GetMaxId(), resp.Msg.GetStep()
	}
	w.end(op, p, err)
	return op
}

// probe aims a burst of reads at a member just resumed from a pause: if
// it serves reads without checking it still leads, they are stale. A
// GetTag of each lin tag, and the other store reads (probeReads), each
// under a client number of its own.
func (w *workload) probe(p *launch.Proc, client int) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.OpTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, tag := range w.linTags {
		wg.Add(1)
		go func() { defer wg.Done(); w.get(ctx, client+i, p, tag) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); w.probeReads(context.Background(), p, client+len(w.linTags)+1) }()
	wg.Wait()
}

// allocOp: NextIDs on an alloc tag or NextSnowflakeIDs, over a serving
// path of pickPath: connect-go over HTTP/2 or HTTP/1.1, or a Leaf GET
// (one ID). Leaf GETs never ask for a solo tag: net/http's client
// re-sends a GET whose kept-alive connection broke before the answer,
// and an ID taken by the lost first send would look burned
// (checker.NoBurnedIDs).
func (w *workload) allocOp(ctx context.Context, r *rand.Rand, client int, p *launch.Proc) {
	path := w.pickPath(r)
	cli := w.c.AllocClient(p)
	leaf := path == history.PathLeafH1 || path == history.PathLeafH2
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	count := w.cfg.MinCount + r.Intn(21-w.cfg.MinCount)
	if leaf {
		count = 1
	}
	if r.Intn(2) == 0 {
		tag := w.allocTags[r.Intn(len(w.allocTags))]
		if solo, ok := w.soloTags[p.Name]; ok && !leaf && r.Intn(100) < w.cfg.SoloShare {
			tag = solo
		}
		op := w.begin(client, history.NextIDs, tag, p)
		op.Count, op.Path = count, path
		var err error
		if leaf {
			var id int64
			if id, err = w.leafGet(cctx, p, path, "/api/segment/get/"+tag, poolFront); err == nil {
				op.IDs = []int64{id}
			}
		} else {
			if path == history.PathH1 {
				cli = w.tr.allocClientH1(p, poolFront)
			}
			var resp *connect.Response[seqsvrv1.NextIDsResponse]
			if resp, err = cli.NextIDs(cctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: op.Tag, Count: int32(count)})); err == nil {
				op.IDs = resp.Msg.GetIds()
			}
		}
		w.end(op, p, err)
	} else {
		op := w.begin(client, history.Snowflake, "", p)
		op.Count, op.Path = count, path
		var err error
		if leaf {
			var id int64
			if id, err = w.leafGet(cctx, p, path, "/api/snowflake/get/"+w.allocTags[0], poolOther); err == nil {
				op.IDs = []int64{id}
			}
		} else {
			if path == history.PathH1 {
				cli = w.tr.allocClientH1(p, poolOther)
			}
			var resp *connect.Response[seqsvrv1.NextSnowflakeIDsResponse]
			if resp, err = cli.NextSnowflakeIDs(cctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: int32(count)})); err == nil {
				op.IDs = resp.Msg.GetIds()
			}
		}
		w.end(op, p, err)
		w.noteSnowflake(op, p)
		if op.OK && r.Intn(decodeEvery) == 0 {
			w.decode(cctx, client, p, cli, path, op.IDs[0])
		}
	}
	if !leaf && r.Intn(statusEvery) == 0 {
		w.status(cctx, client, p, path)
	}
	if leaf && r.Intn(leafMethodEvery) == 0 {
		w.leafMethod(ctx, r, client, p, path) // reads.go
	}
	if ctx.Err() == nil && !p.Running() {
		// Do not spin on a dead process.
		time.Sleep(20 * time.Millisecond)
	}
}

// statusEvery: one Connect call of an alloc worker in statusEvery is
// followed by a Status call over the same path.
const statusEvery = 50

func (w *workload) status(ctx context.Context, client int, p *launch.Proc, path string) {
	op := w.begin(client, history.Status, "", p)
	op.Path = path
	cli := w.c.AllocClient(p)
	if path == history.PathH1 {
		cli = w.tr.allocClientH1(p, poolOther) // not a front route
	}
	_, err := cli.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	w.end(op, p, err)
}

// decodeEvery: one snowflake call in decodeEvery is followed by a
// DecodeSnowflake of its first ID, over the same Connect path (a Leaf
// call's over HTTP/2), which checker.SnowflakeDecode compares with the
// layout.
const decodeEvery = 10

func (w *workload) decode(ctx context.Context, client int, p *launch.Proc, cli seqsvrv1connect.AllocServiceClient, path string, id int64) {
	op := w.begin(client, history.Decode, "", p)
	op.IDs = []int64{id}
	if path != history.PathH1 {
		path = history.PathH2
	}
	op.Path = path
	resp, err := cli.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: id}))
	if err == nil {
		op.Decoded = &history.Decoded{TimestampMs: resp.Msg.GetTimestampMs(), Worker: resp.Msg.GetWorkerId(), Sequence: resp.Msg.GetSequence()}
	}
	w.end(op, p, err)
}

// resolveParallel bounds the concurrent re-issues of resolve: enough to
// learn thousands of outcomes in seconds, few enough not to overload a
// 2-core box's three members.
const resolveParallel = 16

// resolve learns the outcome of every reservation that failed or timed
// out by re-issuing it with the same request_id: the store answers a
// retried request_id with the segment it reserved the first time, or
// reserves it now (or answers not_found if the tag is absent now); either
// way the operation took effect between its call and the re-issue's
// return. This holds because the re-issue is committed by a leader whose
// log no longer lets the first call commit later. Re-issues run
// resolveParallel at a time. Calls that never left the client (NotSent)
// and those answered not_found are left alone. Each op re-issued ends
// Resolved or Unresolved, which is what the report counts.
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
		if op.Kind == history.Reserve && !op.OK && !op.NotSent && !op.Answered() {
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
		if connect.CodeOf(err) == connect.CodeNotFound {
			// The request_id is not in the record, so the first call
			// never took effect (and no longer can: see resolve); the
			// re-issue found the tag absent, within the op's interval.
			op.Resolved, op.Code = true, history.CodeNotFound
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
