package fsm

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// applyRegisterWorker hands node_id its worker ID under a lease measured on
// the leader's clock (now). The caller's clock (c.now_ms) is checked against
// the worker's recorded last timestamp. When a new instance takes a worker
// ID over, the previous holder may have issued IDs up to its last reported
// timestamp plus one lease TTL before fencing itself, so the new holder's
// floor starts there.
func (st *fsmState) applyRegisterWorker(now int64, c *seqsvrv1.RegisterWorkerCommand) Result {
	ttl, retention := orDefault(c.GetLeaseTtlMs(), spec.DefaultWorkerLeaseTTL), orDefault(c.GetRetentionMs(), spec.DefaultWorkerRetention)
	if c.GetNodeId() == "" {
		return Result{Err: fmt.Errorf("%w: node_id must not be empty", errs.InvalidArgument)}
	}
	if err := st.fenced(now, "snowflake worker ID"); err != nil {
		return Result{Err: err}
	}
	if w, ok := st.workers[c.GetNodeId()]; ok {
		if w.GetInstanceId() != c.GetInstanceId() && w.GetLeaseExpiresMs() > now {
			return Result{Err: fmt.Errorf("%w: worker %d of node %q is leased by instance %q for another %d ms",
				ErrLeaseHeld, w.GetWorkerId(), w.GetNodeId(), w.GetInstanceId(), w.GetLeaseExpiresMs()-now)}
		}
		if err := clockCheck(c.GetNowMs(), w); err != nil {
			return Result{Err: err}
		}
		if w.GetInstanceId() != c.GetInstanceId() {
			margin := ttl
			if plantedTakeoverNoMargin() {
				margin = 0
			}
			w.LastTimestampMs = max(w.GetLastTimestampMs()+margin, c.GetNowMs())
			w.InstanceId = c.GetInstanceId()
			w.RegisteredMs = now
		} else {
			w.LastTimestampMs = max(w.GetLastTimestampMs(), c.GetNowMs())
		}
		w.LeaseExpiresMs = now + ttl
		return st.workerAnswer(w, now, ttl)
	}

	w := &seqsvrv1.WorkerState{NodeId: c.GetNodeId(), InstanceId: c.GetInstanceId(), RegisteredMs: now, LeaseExpiresMs: now + ttl}
	if capacity := int64(1) << st.layout.GetWorkerBits(); st.nextWorkerID < capacity {
		w.WorkerId = st.nextWorkerID
		w.LastTimestampMs = c.GetNowMs()
		st.nextWorkerID++
	} else {
		old := st.reclaimable(now, retention)
		if old == nil {
			return Result{Err: fmt.Errorf("%w: all %d worker IDs are held or expired less than %d ms ago; remove idle allocsvrs or wait",
				ErrWorkersExhausted, capacity, retention)}
		}
		if err := clockCheck(c.GetNowMs(), old); err != nil {
			return Result{Err: err}
		}
		delete(st.workers, old.GetNodeId())
		w.WorkerId = old.GetWorkerId()
		w.LastTimestampMs = max(old.GetLastTimestampMs()+ttl, c.GetNowMs())
	}
	st.workers[w.NodeId] = w
	return st.workerAnswer(w, now, ttl)
}

// reclaimable picks the worker whose lease expired longest ago, if that was
// more than retention ago. Ties go to the lowest worker ID, so the choice
// does not depend on map order.
func (st *fsmState) reclaimable(now, retention int64) *seqsvrv1.WorkerState {
	var best *seqsvrv1.WorkerState
	for _, w := range st.workers {
		if w.GetLeaseExpiresMs()+retention >= now {
			continue
		}
		if best == nil || w.GetLeaseExpiresMs() < best.GetLeaseExpiresMs() ||
			w.GetLeaseExpiresMs() == best.GetLeaseExpiresMs() && w.GetWorkerId() < best.GetWorkerId() {
			best = w
		}
	}
	return best
}

// applyRenewWorker extends the lease of the current holder only.
func (st *fsmState) applyRenewWorker(now int64, c *seqsvrv1.RenewWorkerCommand) Result {
	ttl := orDefault(c.GetLeaseTtlMs(), spec.DefaultWorkerLeaseTTL)
	w, ok := st.workers[c.GetNodeId()]
	switch {
	case !ok:
		return Result{Err: fmt.Errorf("%w: node %q holds no worker ID; register again", ErrLeaseLost, c.GetNodeId())}
	case w.GetWorkerId() != c.GetWorkerId():
		return Result{Err: fmt.Errorf("%w: node %q holds worker %d, not %d", ErrLeaseLost, c.GetNodeId(), w.GetWorkerId(), c.GetWorkerId())}
	case w.GetInstanceId() != c.GetInstanceId():
		return Result{Err: fmt.Errorf("%w: worker %d of node %q is now held by instance %q, not %q",
			ErrLeaseLost, w.GetWorkerId(), c.GetNodeId(), w.GetInstanceId(), c.GetInstanceId())}
	}
	w.LastTimestampMs = max(w.GetLastTimestampMs(), c.GetNowMs())
	w.LeaseExpiresMs = now + ttl
	return st.workerAnswer(w, now, ttl)
}

func clockCheck(callerNowMs int64, w *seqsvrv1.WorkerState) error {
	if callerNowMs < w.GetLastTimestampMs() {
		return fmt.Errorf("%w: caller clock %d ms is %d ms behind worker %d's last timestamp %d ms",
			ErrClockBehind, callerNowMs, w.GetLastTimestampMs()-callerNowMs, w.GetWorkerId(), w.GetLastTimestampMs())
	}
	return nil
}

func (st *fsmState) workerAnswer(w *seqsvrv1.WorkerState, now, ttl int64) Result {
	return Result{Worker: &WorkerAnswer{
		State:       proto.Clone(w).(*seqsvrv1.WorkerState),
		Layout:      proto.Clone(st.layout).(*seqsvrv1.SnowflakeLayout),
		LeaderNowMs: now,
		LeaseTTLMs:  ttl,
	}}
}

func orDefault(ms int64, d time.Duration) int64 {
	if ms > 0 {
		return ms
	}
	return d.Milliseconds()
}
