package fsm

import "github.com/seqsvr/seqsvr/internal/errs"

// The state machine's own errors, each of an errs kind: deterministic
// outcomes of a committed command, answered to the caller by the store.
// Everything else it refuses wraps a kind directly (errs.InvalidArgument,
// errs.NotFound, errs.AlreadyExists, errs.ResourceExhausted) with
// fmt.Errorf("%w: ...").
var (
	// ErrLeaseHeld: the node_id's worker lease is held by another live
	// instance.
	ErrLeaseHeld = errs.New(errs.FailedPrecondition, "worker lease held by another instance")
	// ErrLeaseLost: a renewal from an instance that no longer holds the
	// worker ID.
	ErrLeaseLost = errs.New(errs.FailedPrecondition, "worker lease lost")
	// ErrClockBehind: the caller's clock is behind the worker's recorded
	// last timestamp; retry once it has caught up.
	ErrClockBehind = errs.New(errs.Unavailable, "clock behind the worker's last timestamp")
	// ErrWorkersExhausted: every worker ID of the layout is taken and none
	// can be reclaimed.
	ErrWorkersExhausted = errs.New(errs.ResourceExhausted, "worker IDs exhausted")
	// ErrSeqNodeHeld: a SeqHeartbeat for a node_id whose per-key sequence
	// lease is held by another live instance.
	ErrSeqNodeHeld = errs.New(errs.FailedPrecondition, "node held by another live instance")
	// ErrNotSectionOwner: a RaiseSections from a caller that is not the
	// live owner of every section it names; it must stop serving them.
	ErrNotSectionOwner = errs.New(errs.FailedPrecondition, "not the section owner")
	// ErrRestoreFence: a worker registration before the restore fence
	// (the old cluster's leases may still run); retry after it.
	ErrRestoreFence = errs.New(errs.Unavailable, "restored cluster still waiting for the old leases to end")
)
