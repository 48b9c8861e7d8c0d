//go:build faults

package recovery

import "github.com/seqsvr/seqsvr/internal/faults"

// The planted bug of the fault harness that lives in the restore
// (internal/faults; planted with SEQSVR_FAULTS_BUGS), reached through a
// hook that production code calls and that faults_off.go defines as a
// no-op.

// plantedRestoreNoJump is restore-no-jump, the planted bug of the
// harness's disaster scenario: when planted, Compute jumps no counter, so
// a restored cluster continues where the backup left it and hands out
// again what the lost cluster handed out after the backup.
func plantedRestoreNoJump() bool { return faults.Bug(faults.BugRestoreNoJump) }
