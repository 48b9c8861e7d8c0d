//go:build !faults

package fsm

import seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"

// The planted bugs' hooks in the state machine, for builds without -tags
// faults: constant no-ops the compiler removes. The bugs themselves are in
// faults_on.go.

func plantedSnapshotDropsMaxID(*seqsvrv1.FSMSnapshot) {}

func plantedNoHandoverWait() bool   { return false }
func plantedTakeoverNoMargin() bool { return false }
func plantedIgnoreRequestID() bool  { return false }

func reserveGap(*seqsvrv1.ReserveSegmentCommand) int64 { return 0 }
