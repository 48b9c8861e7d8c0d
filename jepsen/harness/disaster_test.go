package harness

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// TestDisasterSmoke is the short disaster run of `make test`: backups
// under load, the whole store restored from the oldest one, a quorum
// lost and recovered; every checker must pass over the history of every
// cluster.
func TestDisasterSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process fault run")
	}
	rep := runCfg(t, Disaster(35*time.Second))
	for _, f := range []string{nemesis.RestoreOldest, nemesis.QuorumLoss} {
		if rep.Faults[f] == 0 {
			t.Errorf("no %s in the run: %v", f, rep.Faults)
		}
	}
	if !rep.OK {
		t.Fatalf("checkers failed: %v", rep.Failed())
	}
}
