//go:build faults

package storage

import (
	"context"

	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// The planted bugs of the fault harness (internal/faults; planted with
// SEQSVR_FAULTS_BUGS). Each is reached through a hook that production code
// calls and that faults_off.go defines as a no-op.

// plantedReserveBeforeCommit is reserve-before-commit: when planted, the
// leader answers ReserveSegment before the command commits.
func (s *Store) plantedReserveBeforeCommit(cmd *seqsvrv1.Command) (*seqsvrv1.Segment, bool) {
	if !faults.Bug(faults.BugReserveBeforeCommit) {
		return nil, false
	}
	return s.reserveUncommitted(cmd)
}

// reserveUncommitted answers with the range the FSM would reserve next
// (nextRange, on the leader's current state) and proposes in the
// background, so a crash or a lost leadership can hand the same range out
// twice. It declines (false) off the leader and for a reservation the FSM
// would refuse, which then takes the normal path.
func (s *Store) reserveUncommitted(cmd *seqsvrv1.Command) (*seqsvrv1.Segment, bool) {
	if s.raft.State() != raft.Leader {
		return nil, false
	}
	c := cmd.GetReserveSegment()
	var seg *seqsvrv1.Segment
	s.fsm.read(func(st *fsmState) {
		t, ok := st.tags[c.GetTag()]
		if !ok {
			return
		}
		if first, last, err := nextRange(t, c.GetSize()); err == nil {
			seg = &seqsvrv1.Segment{Tag: t.GetTag(), First: first, Last: last, Step: t.GetStep()}
		}
	})
	if seg == nil {
		return nil, false
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), defaultApplyTimeout)
		defer cancel()
		_, _ = s.propose(ctx, cmd)
	}()
	return seg, true
}

// plantedStaleReads is stale-reads: when planted, GetTag and ListTags skip
// the leader check, the barrier and VerifyLeader, and serve whatever this
// member has.
func plantedStaleReads() bool { return faults.Bug(faults.BugStaleReads) }

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
