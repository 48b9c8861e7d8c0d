package snowflake

import (
	"context"
	"errors"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/storeclient"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/spec"
)

var _ WorkerStore = (*storeclient.Client)(nil)

// fakeWorkerStore follows the store's worker rules (storage/ FSM): sticky
// worker IDs per node, one live holder (instance) per lease, a floor raised
// by the TTL when the holder changes, refusal of clocks behind the record.
type fakeWorkerStore struct {
	mu          sync.Mutex
	clock       clock.Clock
	leaderSkew  time.Duration
	ttl         time.Duration
	down        error // answers every call with this while set
	renewErr    error // answers RenewWorker with this while set
	noLeaderNow bool
	regDelay    time.Duration // RegisterWorker takes this long (advances a fake clock)
	nodes       map[string]*fakeWorker
	next        int64
	renewals    int
}

type fakeWorker struct {
	id       int64
	holder   string
	lastTs   int64
	expireMs int64
}

func newFakeWorkerStore(clk clock.Clock) *fakeWorkerStore {
	return &fakeWorkerStore{clock: clk, ttl: 10 * time.Second, nodes: map[string]*fakeWorker{}}
}

func (f *fakeWorkerStore) leaderNow() int64 { return f.clock.Now().Add(f.leaderSkew).UnixMilli() }

func (f *fakeWorkerStore) answer(node string, w *fakeWorker, now int64) *seqsvrv1.Worker {
	out := &seqsvrv1.Worker{
		NodeId: node, WorkerId: w.id, LastTimestampMs: w.lastTs, LeaseExpiresMs: w.expireMs,
		InstanceId: w.holder, Layout: spec.DefaultLayout(), LeaseTtlMs: f.ttl.Milliseconds(),
	}
	if !f.noLeaderNow {
		out.LeaderNowMs = now
	}
	return out
}

func (f *fakeWorkerStore) RegisterWorker(_ context.Context, req *seqsvrv1.RegisterWorkerRequest) (*seqsvrv1.Worker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	now := f.leaderNow()
	if c, ok := f.clock.(*clocktest.Fake); ok && f.regDelay > 0 {
		c.Advance(f.regDelay)
	}
	w, ok := f.nodes[req.GetNodeId()]
	if !ok {
		w = &fakeWorker{id: f.next}
		f.next++
		f.nodes[req.GetNodeId()] = w
	}
	if w.holder != "" && w.holder != req.GetInstanceId() && w.expireMs > now {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("worker lease held by another live process"))
	}
	if req.GetNowMs() < w.lastTs {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("caller clock behind the last timestamp"))
	}
	if w.holder != req.GetInstanceId() && w.holder != "" {
		w.lastTs += f.ttl.Milliseconds()
	}
	w.holder = req.GetInstanceId()
	w.lastTs = max(w.lastTs, req.GetNowMs())
	w.expireMs = now + f.ttl.Milliseconds()
	return f.answer(req.GetNodeId(), w, now), nil
}

func (f *fakeWorkerStore) RenewWorker(_ context.Context, req *seqsvrv1.RenewWorkerRequest) (*seqsvrv1.Worker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	if f.renewErr != nil {
		return nil, f.renewErr
	}
	now := f.leaderNow()
	w, ok := f.nodes[req.GetNodeId()]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("unknown worker"))
	}
	if w.id != req.GetWorkerId() || w.holder != req.GetInstanceId() {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("not the lease holder"))
	}
	f.renewals++
	w.lastTs = max(w.lastTs, req.GetNowMs())
	w.expireMs = now + f.ttl.Milliseconds()
	return f.answer(req.GetNodeId(), w, now), nil
}

func (f *fakeWorkerStore) ClusterStatus(context.Context) (*seqsvrv1.ClusterStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	return &seqsvrv1.ClusterStatusResponse{NowMs: f.leaderNow()}, nil
}

func (f *fakeWorkerStore) set(fn func(f *fakeWorkerStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeWorkerStore) lastTs(node string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[node].lastTs
}
