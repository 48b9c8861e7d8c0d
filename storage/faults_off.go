//go:build !faults

package storage

import seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"

// The planted bugs' hooks in the server (the state machine's are in
// package fsm), for builds without -tags faults: constant no-ops the
// compiler removes. The bugs themselves are in faults_on.go.

func (s *Store) plantedReserveBeforeCommit(*seqsvrv1.Command) (*seqsvrv1.Segment, bool) {
	return nil, false
}

func plantedStaleReads() bool { return false }

func plantedLocalReads() bool { return false }

func plantedUngatedNewField(*seqsvrv1.ReserveSegmentCommand) {}

func plantedBlindBootstrap() bool { return false }
