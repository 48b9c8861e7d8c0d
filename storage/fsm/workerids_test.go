package fsm

import (
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// TestWorkerIDsInUse: a worker counts while leased and for retention
// after its lease; past that it is reclaimable and no longer counted.
func TestWorkerIDsInUse(t *testing.T) {
	f := New(&seqsvrv1.SnowflakeLayout{EpochMs: spec.DefaultEpochMs, TimestampBits: 41, WorkerBits: 2, SequenceBits: 12})
	if in, limit := f.WorkerIDs(1_000, retention); in != 0 || limit != 4 {
		t.Fatalf("empty: %d of %d, want 0 of 4", in, limit)
	}
	mustWorker(t, applyAt(t, f, 1_000, registerCmd("a", "i", 1_000, ttl, retention)))
	mustWorker(t, applyAt(t, f, 2_000, registerCmd("b", "j", 2_000, ttl, retention)))
	if in, _ := f.WorkerIDs(2_000, retention); in != 2 {
		t.Fatalf("two leased: %d in use", in)
	}
	// a's lease and retention are over, b's retention is not.
	if in, _ := f.WorkerIDs(1_000+ttl+retention+1, retention); in != 1 {
		t.Fatalf("a reclaimable: %d in use, want 1", in)
	}
}
