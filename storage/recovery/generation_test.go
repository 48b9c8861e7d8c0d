package recovery

import (
	"math"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func genPrepare(t *testing.T, old *seqsvrv1.FSMSnapshot, at time.Time, id string) *seqsvrv1.FSMSnapshot {
	t.Helper()
	st, _, err := Prepare(old, Options{Over: time.Hour, Start: at, ClusterID: id, Generation: at.UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A restore outranks the cluster it replaces and every restore before it:
// its generation is its start time, or the lost one's + 1 when a clock
// behind would give less.
func TestPrepareGeneration(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	backup := &seqsvrv1.FSMSnapshot{ClusterId: "lost", Tags: []*seqsvrv1.TagState{{Tag: "order", MaxId: 10, Step: 1}}}
	first := genPrepare(t, backup, t0, "r1")
	if g := first.GetGeneration(); g != t0.UnixMilli() {
		t.Fatalf("first restore: generation %d, want its start %d", g, t0.UnixMilli())
	}
	// A later restore from the same (older) backup is higher still.
	second := genPrepare(t, backup, t0.Add(time.Minute), "r2")
	if second.GetGeneration() <= first.GetGeneration() {
		t.Fatalf("later restore of an older backup: generation %d, not above the first's %d", second.GetGeneration(), first.GetGeneration())
	}
	// A recovery of the first restored cluster on a host whose clock is
	// behind still goes above it.
	third := genPrepare(t, first, t0.Add(-time.Hour), "r3")
	if third.GetGeneration() != first.GetGeneration()+1 {
		t.Fatalf("clock behind: generation %d, want the lost one's + 1 = %d", third.GetGeneration(), first.GetGeneration()+1)
	}
	if backup.GetGeneration() != 0 || first.GetGeneration() != t0.UnixMilli() {
		t.Fatal("Prepare changed its input")
	}
	// No higher generation exists: refused, not wrapped.
	if _, _, err := Prepare(&seqsvrv1.FSMSnapshot{Generation: math.MaxInt64}, Options{Start: t0, ClusterID: "x", Generation: 1}); err == nil {
		t.Fatal("generation 2^63-1 accepted")
	}
}
