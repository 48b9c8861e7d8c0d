//go:build faults

package recovery

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/faults"
)

// In a faults build the bug is planted only by name: unnamed, Compute
// jumps; named in SEQSVR_FAULTS_BUGS (in a child process: the variable is
// read at start), the counter stays where it was.
func TestPlantedRestoreNoJump(t *testing.T) {
	to, _ := Compute(100, 10, time.Minute, 0, 0)
	if os.Getenv("RECOVERY_PLANTED_CHILD") == "" {
		if os.Getenv("SEQSVR_FAULTS_BUGS") == "" && to != 700 {
			t.Fatalf("unplanted: Compute(100, 10/s, 1m) = %d, want 700", to)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestPlantedRestoreNoJump$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RECOVERY_PLANTED_CHILD=1", "SEQSVR_FAULTS_BUGS="+faults.BugRestoreNoJump)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if to != 100 {
		t.Fatalf("restore-no-jump: Compute(100, 10/s, 1m) = %d, want 100 (no jump)", to)
	}
}
