//go:build faults

package fsm

import (
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// The planted bugs of the fault harness that live in the state machine
// (internal/faults; planted with SEQSVR_FAULTS_BUGS). Each is reached
// through a hook that production code calls and that faults_off.go defines
// as a no-op.

// plantedSnapshotDropsMaxID is snapshot-drops-maxid: when planted,
// snapshots store every tag's max_id as 0.
func plantedSnapshotDropsMaxID(snap *seqsvrv1.FSMSnapshot) {
	if !faults.Bug(faults.BugSnapshotDropsMaxID) {
		return
	}
	for _, t := range snap.GetTags() {
		t.MaxId = 0
	}
}

// plantedNoHandoverWait is seq-no-handover-wait: when planted, rebalance
// gives a section owned by a live allocsvr to its new target at once
// instead of setting next_owner and waiting for the release or the lease
// expiry, so two allocsvrs may serve the same keys.
func plantedNoHandoverWait() bool { return faults.Bug(faults.BugSeqNoHandoverWait) }

// plantedTakeoverNoMargin is takeover-no-margin: when planted, a new
// instance taking a worker ID over starts at the old holder's last
// reported timestamp instead of one lease TTL above it, so the old
// holder's last IDs (issued up to that TTL minus its fence margin ahead)
// can be issued again by a new holder whose clock is behind.
func plantedTakeoverNoMargin() bool { return faults.Bug(faults.BugTakeoverNoMargin) }

// plantedIgnoreRequestID is ignore-request-id: when planted,
// ReserveSegment never looks its request_id up, so a retry reserves a
// second segment.
func plantedIgnoreRequestID() bool { return faults.Bug(faults.BugIgnoreRequestID) }
