//go:build faults

package segment

import "github.com/seqsvr/seqsvr/internal/faults"

// plantedDropsCarry is the planted bug switch-drops-carry: a new segment
// replaces a drained current one at once even while IDs are carried from
// a request that could not complete, and those IDs are dropped: burned,
// never handed out.
var plantedDropsCarry = faults.Bug(faults.BugSwitchDropsCarry)

func dropsCarry() bool { return plantedDropsCarry }
