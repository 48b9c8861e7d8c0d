//go:build faults

package storage

import (
	"context"

	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// The planted bugs of the fault harness that live in the server
// (internal/faults; planted with SEQSVR_FAULTS_BUGS); the state machine's
// are in package fsm. Each is reached through a hook that production code
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
// (fsm.NextSegment, on the leader's current state) and proposes in the
// background, so a crash or a lost leadership can hand the same range out
// twice. It declines (false) off the leader and for a reservation the FSM
// would refuse, which then takes the normal path.
func (s *Store) reserveUncommitted(cmd *seqsvrv1.Command) (*seqsvrv1.Segment, bool) {
	if s.raft.State() != raft.Leader {
		return nil, false
	}
	c := cmd.GetReserveSegment()
	seg, ok := s.fsm.NextSegment(c.GetTag(), c.GetSize())
	if !ok {
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

// plantedLocalReads is local-reads: when planted, ListTags, ListSpaces,
// GetSpace and GetRouting are answered from whatever this member has
// applied, a follower's lagging state included: it neither forwards them
// to the leader nor checks it leads. GetTag stays linearizable, so only
// the checkers of those reads can see it.
func plantedLocalReads() bool { return faults.Bug(faults.BugLocalReads) }

// plantedUngatedNewField is ungated-new-field: when planted, every
// reservation this leader proposes carries fsm.PlantedGapField, a field
// of a "newer feature level" that this binary's state machine applies
// (the segment starts that many IDs above max_id) and the base release's
// ignores, and it proposes the field whatever the other members run: the
// cluster-version gate is missing. Members of the two versions then apply
// the same entry differently and their max_ids part.
func plantedUngatedNewField(c *seqsvrv1.ReserveSegmentCommand) {
	if faults.Bug(faults.BugUngatedNewField) {
		fsm.PlantGap(c)
	}
}

// plantedBlindBootstrap is blind-bootstrap: when planted, a member without
// its Raft log that was given --peers bootstraps them at once, asking no
// one whether a cluster exists, and votes on what it forgot.
func plantedBlindBootstrap() bool { return faults.Bug(faults.BugBlindBootstrap) }
