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
