package storage

import "github.com/seqsvr/seqsvr/storage/fsm"

// The limits the state machine defines and Config defaults to, named here
// too for the store's callers (cmd/storesvr's flags).
const (
	// DefaultMaxSegmentSize is Config.MaxSegmentSize's default.
	DefaultMaxSegmentSize = fsm.DefaultMaxSegmentSize
	// DefaultRequestRecordLimit is Config.RequestRecordLimit's default.
	DefaultRequestRecordLimit = fsm.DefaultRequestRecordLimit
)
