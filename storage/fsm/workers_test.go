package fsm

import (
	"errors"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

const (
	ttl       = 100
	retention = 1000
)

func smallLayout() *seqsvrv1.SnowflakeLayout {
	return &seqsvrv1.SnowflakeLayout{EpochMs: spec.DefaultEpochMs, TimestampBits: 41, WorkerBits: 2, SequenceBits: 12}
}

func mustWorker(t *testing.T, r Result) *seqsvrv1.WorkerState {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("unexpected error: %v", r.Err)
	}
	return r.Worker.State
}

func TestWorkerRegisterAndReturn(t *testing.T) {
	f := New(nil)
	r := applyAt(t, f, 10_000, registerCmd("n1", "i1", 9_990, ttl, retention))
	w := mustWorker(t, r)
	if w.GetWorkerId() != 0 || w.GetLastTimestampMs() != 9_990 || w.GetLeaseExpiresMs() != 10_000+ttl {
		t.Fatalf("first worker %v", w)
	}
	if r.Worker.LeaderNowMs != 10_000 || r.Worker.LeaseTTLMs != ttl || r.Worker.Layout.GetWorkerBits() != spec.DefaultWorkerBits ||
		r.Worker.Layout.GetEpochMs() != spec.DefaultEpochMs {
		t.Fatalf("answer %+v", r.Worker)
	}
	if w2 := mustWorker(t, applyAt(t, f, 10_001, registerCmd("n2", "j1", 10_001, ttl, retention))); w2.GetWorkerId() != 1 {
		t.Fatalf("second node got worker %d, want 1", w2.GetWorkerId())
	}
	// Same node, same instance (a retried registration): same ID, lease extended.
	w = mustWorker(t, applyAt(t, f, 10_050, registerCmd("n1", "i1", 10_040, ttl, retention)))
	if w.GetWorkerId() != 0 || w.GetLeaseExpiresMs() != 10_050+ttl || w.GetLastTimestampMs() != 10_040 {
		t.Fatalf("re-register %v", w)
	}
}

func TestWorkerLeaseConflictAndTakeover(t *testing.T) {
	f := New(nil)
	mustWorker(t, applyAt(t, f, 1_000, registerCmd("n1", "old", 1_000, ttl, retention)))
	mustWorker(t, applyAt(t, f, 1_050, renewCmd("n1", 0, "old", 1_060, ttl)))
	// A second process with the same node_id while the lease is live.
	r := applyAt(t, f, 1_100, registerCmd("n1", "new", 1_100, ttl, retention))
	if !errors.Is(r.Err, ErrLeaseHeld) {
		t.Fatalf("live lease: err %v, want ErrLeaseHeld", r.Err)
	}
	if c := errs.Connect(r.Err); c.Error() == "" || connect.CodeOf(c).String() != "failed_precondition" {
		t.Fatalf("code %v", c)
	}
	// After expiry (1_050+ttl) the restarted node gets its old ID back, with
	// a floor above what the old holder could have issued.
	w := mustWorker(t, applyAt(t, f, 1_151, registerCmd("n1", "new", 1_151, ttl, retention)))
	if w.GetWorkerId() != 0 || w.GetInstanceId() != "new" {
		t.Fatalf("takeover %v", w)
	}
	if want := int64(1_060 + ttl); w.GetLastTimestampMs() != want {
		t.Fatalf("last_timestamp_ms %d, want old last + ttl = %d", w.GetLastTimestampMs(), want)
	}
	// The old instance can no longer renew.
	if r := applyAt(t, f, 1_160, renewCmd("n1", 0, "old", 1_160, ttl)); !errors.Is(r.Err, ErrLeaseLost) {
		t.Fatalf("old holder renew: %v", r.Err)
	}
}

func TestWorkerRefusesClockBehind(t *testing.T) {
	f := New(nil)
	mustWorker(t, applyAt(t, f, 5_000, registerCmd("n1", "i1", 5_000, ttl, retention)))
	mustWorker(t, applyAt(t, f, 5_010, renewCmd("n1", 0, "i1", 5_500, ttl))) // its clock ran ahead
	r := applyAt(t, f, 5_020, registerCmd("n1", "i1", 5_400, ttl, retention))
	if !errors.Is(r.Err, ErrClockBehind) {
		t.Fatalf("err %v, want ErrClockBehind", r.Err)
	}
	if connect.CodeOf(errs.Connect(r.Err)).String() != "unavailable" {
		t.Fatalf("code of %v", r.Err)
	}
	var w *seqsvrv1.WorkerState
	f.read(func(st *fsmState) { w = st.workers["n1"] })
	if w.GetLastTimestampMs() != 5_500 || w.GetLeaseExpiresMs() != 5_010+ttl {
		t.Fatalf("refused registration changed state: %v", w)
	}
}

func TestWorkerRenew(t *testing.T) {
	f := New(nil)
	mustWorker(t, applyAt(t, f, 1_000, registerCmd("n1", "i1", 1_000, ttl, retention)))
	w := mustWorker(t, applyAt(t, f, 1_030, renewCmd("n1", 0, "i1", 1_040, ttl)))
	if w.GetLeaseExpiresMs() != 1_030+ttl || w.GetLastTimestampMs() != 1_040 {
		t.Fatalf("renewed %v", w)
	}
	// An older clock reading never lowers the recorded timestamp.
	if w := mustWorker(t, applyAt(t, f, 1_040, renewCmd("n1", 0, "i1", 1_020, ttl))); w.GetLastTimestampMs() != 1_040 {
		t.Fatalf("last went backwards: %v", w)
	}
	for name, c := range map[string]*seqsvrv1.Command{
		"unknown node":    renewCmd("n9", 0, "i1", 1_050, ttl),
		"wrong worker":    renewCmd("n1", 3, "i1", 1_050, ttl),
		"wrong instance":  renewCmd("n1", 0, "i2", 1_050, ttl),
		"empty instance ": renewCmd("n1", 0, "", 1_050, ttl),
	} {
		if r := applyAt(t, f, 1_050, c); !errors.Is(r.Err, ErrLeaseLost) {
			t.Errorf("%s: err %v, want ErrLeaseLost", name, r.Err)
		}
	}
}

func TestWorkerExhaustionAndReclaim(t *testing.T) {
	f := New(smallLayout()) // 4 worker IDs
	for i, node := range []string{"a", "b", "c", "d"} {
		w := mustWorker(t, applyAt(t, f, int64(1_000+i), registerCmd(node, "i", int64(1_000+i), ttl, retention)))
		if w.GetWorkerId() != int64(i) {
			t.Fatalf("node %s got %d", node, w.GetWorkerId())
		}
	}
	// All leases live: exhausted.
	r := applyAt(t, f, 1_010, registerCmd("e", "i", 1_010, ttl, retention))
	if !errors.Is(r.Err, ErrWorkersExhausted) || connect.CodeOf(errs.Connect(r.Err)).String() != "resource_exhausted" {
		t.Fatalf("err %v", r.Err)
	}
	// Keep b alive; the others expire at 1_100, 1_102, 1_103.
	mustWorker(t, applyAt(t, f, 1_050, renewCmd("b", 1, "i", 1_050, ttl)))
	// Expired, but not for longer than the retention: still exhausted.
	if r := applyAt(t, f, 1_100+retention, registerCmd("e", "i", 1_100+retention, ttl, retention)); !errors.Is(r.Err, ErrWorkersExhausted) {
		t.Fatalf("within retention: err %v", r.Err)
	}
	// Past the retention of a (expired longest ago): e takes worker 0.
	now := int64(1_100 + retention + 1)
	w := mustWorker(t, applyAt(t, f, now, registerCmd("e", "i", now, ttl, retention)))
	if w.GetWorkerId() != 0 {
		t.Fatalf("reclaimed worker %d, want 0", w.GetWorkerId())
	}
	if w.GetLastTimestampMs() != now {
		t.Fatalf("last %d: want max(old last + ttl, caller now) = %d", w.GetLastTimestampMs(), now)
	}
	f.read(func(st *fsmState) {
		if _, ok := st.workers["a"]; ok {
			t.Fatal("reclaimed node a still mapped")
		}
	})
	// a comes back: it is a new node now, and c (expired longer than d) is next.
	now += 2
	if w := mustWorker(t, applyAt(t, f, now, registerCmd("a", "i", now, ttl, retention))); w.GetWorkerId() != 2 {
		t.Fatalf("returning node a got %d, want 2 (c's)", w.GetWorkerId())
	}
}

func TestWorkerReclaimFloorAboveOldHolder(t *testing.T) {
	f := New(&seqsvrv1.SnowflakeLayout{EpochMs: spec.DefaultEpochMs, TimestampBits: 41, WorkerBits: 0, SequenceBits: 12})
	mustWorker(t, applyAt(t, f, 1_000, registerCmd("a", "i", 1_000, ttl, retention)))
	// a's clock reported far ahead of the leader's.
	mustWorker(t, applyAt(t, f, 1_010, renewCmd("a", 0, "i", 50_000, ttl)))
	now := int64(1_010 + ttl + retention + 1)
	if r := applyAt(t, f, now, registerCmd("b", "j", now, ttl, retention)); !errors.Is(r.Err, ErrClockBehind) {
		t.Fatalf("caller behind the reclaimed worker's last timestamp: %v", r.Err)
	}
	w := mustWorker(t, applyAt(t, f, now, registerCmd("b", "j", 50_001, ttl, retention)))
	if w.GetLastTimestampMs() != 50_000+ttl {
		t.Fatalf("floor %d, want %d", w.GetLastTimestampMs(), 50_000+ttl)
	}
}
