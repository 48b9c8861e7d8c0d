package faults

import (
	"testing"
	"time"
)

// In a normal build nothing can be planted and the clock is untouched:
// production binaries must not carry the harness's levers.
func TestNormalBuildPlantsNothing(t *testing.T) {
	if Enabled {
		t.Skip("built with -tags faults")
	}
	t.Setenv("SEQSVR_FAULTS_BUGS", BugStaleReads)
	for _, b := range []string{BugReserveBeforeCommit, BugStaleReads, BugNoSelfFence, BugSnapshotDropsMaxID, BugSeqNoHandoverWait,
		BugTakeoverNoMargin, BugIgnoreRequestID, BugRestartIgnoresHWM, BugSwitchDropsCarry, BugFrontRepeatsCarry, BugRestoreNoJump, BugUngatedNewField, BugLocalReads, BugBlindBootstrap} {
		if Bug(b) {
			t.Errorf("Bug(%q) = true in a normal build", b)
		}
	}
	if ClockOffset() != 0 || AdminHandler() != nil {
		t.Fatal("clock skew or admin handler present in a normal build")
	}
	if d := time.Since(Now()); d < -time.Second || d > time.Second {
		t.Fatalf("Now is %v away from time.Now", d)
	}
}
