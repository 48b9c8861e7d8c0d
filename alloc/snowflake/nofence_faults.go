//go:build faults

package snowflake

import "github.com/seqsvr/seqsvr/internal/faults"

// plantedNoSelfFence is whether the fault harness planted the bug
// no-self-fence in this process (SEQSVR_FAULTS_BUGS=no-self-fence). With it
// the worker never fences itself: IDs keep flowing after the lease is lost,
// with no lease bound on their timestamps, so a twin that took the worker
// ID over issues the same IDs and the jepsen checker must catch it. Unit
// tests plant it by setting this variable before Start.
var plantedNoSelfFence = faults.Bug(faults.BugNoSelfFence)

func noSelfFence() bool { return plantedNoSelfFence }

// plantedNote prefixes a log line or a Status reason with the bug's name.
func plantedNote(s string) string { return "planted bug " + faults.BugNoSelfFence + ": " + s }

// plantedIgnoreHighWater is the planted bug restart-ignores-hwm: a
// registration takes the store's floor and ignores the data-dir cache's
// high-water mark, so a restart whose clock lands between the last
// timestamp reported to the store and the last one issued repeats IDs.
var plantedIgnoreHighWater = faults.Bug(faults.BugRestartIgnoresHWM)

func ignoreHighWater() bool { return plantedIgnoreHighWater }
