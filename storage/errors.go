package storage

import "github.com/seqsvr/seqsvr/internal/errs"

// The store's own errors, each of an errs kind. Everything else it returns
// wraps a kind directly (errs.InvalidArgument, errs.NotFound,
// errs.AlreadyExists, errs.Unavailable) with fmt.Errorf("%w: ..."), and a
// handler answers errs.Connect(err).
var (
	// ErrNotLeader: this member is not the leader; nothing was proposed, so
	// the call may be forwarded to the leader.
	ErrNotLeader = errs.New(errs.Unavailable, "not the raft leader")
	// ErrNoLeader: no leader is known; retry later.
	ErrNoLeader = errs.New(errs.Unavailable, "no raft leader")
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
	// ErrMemberHeld: AddMember of an ID that a live member holds at
	// another Raft address.
	ErrMemberHeld = errs.New(errs.FailedPrecondition, "node-id held by a live member")
	// ErrNotSectionOwner: a RaiseSections from a caller that is not the
	// live owner of every section it names; it must stop serving them.
	ErrNotSectionOwner = errs.New(errs.FailedPrecondition, "not the section owner")
)
