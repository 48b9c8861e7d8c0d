//go:build faults

package snowflake

import (
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
)

func TestSnowflakeNoSelfFenceBugKeepsServing(t *testing.T) {
	old := plantedNoSelfFence
	plantedNoSelfFence = true // what SEQSVR_FAULTS_BUGS=no-self-fence sets
	t.Cleanup(func() { plantedNoSelfFence = old })
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	s := startTest(t, store, testConfig("a", clk, ""), time.Second)
	clk.Advance(30 * time.Second) // far past the fence and the lease bound
	takeIDs(t, s, 1)
	if st := s.Status(); st.GetFenced() || !strings.Contains(st.GetReason(), "planted bug") {
		t.Fatalf("status = %v", st)
	}
}

// restart-ignores-hwm: a restart whose store lost the records serves at
// once, below what the previous life issued (the bug jepsen's
// restart-below-issued must catch); TestSnowflakeRestartAfterCrashRespectsHighWater
// is the same run without it.
func TestSnowflakeRestartIgnoresHighWaterBug(t *testing.T) {
	old := plantedIgnoreHighWater
	plantedIgnoreHighWater = true // what SEQSVR_FAULTS_BUGS=restart-ignores-hwm sets
	t.Cleanup(func() { plantedIgnoreHighWater = old })
	dir := t.TempDir()
	clk := clocktest.New(t0)
	a := startTest(t, newFakeWorkerStore(clk), testConfig("a", clk, dir), time.Second)
	var last int64
	for range 30 {
		ids := takeIDs(t, a, 10)
		last = ids[len(ids)-1]
		clk.Advance(7 * time.Millisecond)
	}
	crash(a)
	clk.Advance(-100 * time.Millisecond) // restarts with its clock behind the last ID
	b := startTest(t, newFakeWorkerStore(clk), testConfig("a", clk, dir), time.Second)
	first := takeIDs(t, b, 1)[0]
	if split(first).ts > split(last).ts {
		t.Fatalf("with the bug the restart still issued above the last ID: %+v after %+v", split(first), split(last))
	}
}
