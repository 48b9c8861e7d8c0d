package storage

import (
	"context"
	"errors"

	"connectrpc.com/connect"
)

// Sentinel errors of the store. Wrap them with fmt.Errorf("%w: ...") to add
// detail; ConnectError is the one place that maps them to Connect codes.
var (
	// ErrInvalidArgument: malformed tag, negative or overflowing numbers,
	// a request_id reused for another tag, bad page token.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: unknown tag or member.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: CreateTag on an existing tag.
	ErrAlreadyExists = errors.New("already exists")
	// ErrNotLeader: this member is not the leader; nothing was proposed, so
	// the call may be forwarded to the leader.
	ErrNotLeader = errors.New("not the raft leader")
	// ErrNoLeader: no leader is known; retry later.
	ErrNoLeader = errors.New("no raft leader")
	// ErrUnavailable: retryable failure. A write that failed with it may or
	// may not have committed: retry with the same request_id.
	ErrUnavailable = errors.New("unavailable")
	// ErrLeaseHeld: the node_id's worker lease is held by another live
	// instance.
	ErrLeaseHeld = errors.New("worker lease held by another instance")
	// ErrLeaseLost: a renewal from an instance that no longer holds the
	// worker ID.
	ErrLeaseLost = errors.New("worker lease lost")
	// ErrClockBehind: the caller's clock is behind the worker's recorded
	// last timestamp.
	ErrClockBehind = errors.New("clock behind the worker's last timestamp")
	// ErrWorkersExhausted: every worker ID of the layout is taken and none
	// can be reclaimed.
	ErrWorkersExhausted = errors.New("worker IDs exhausted")
)

// ConnectError maps an error of this package to a *connect.Error with the
// contract's code. A *connect.Error (such as the leader's answer to a
// forwarded call) passes through unchanged.
func ConnectError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	switch {
	case errors.Is(err, ErrInvalidArgument):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, ErrNotFound):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, ErrAlreadyExists):
		return connect.NewError(connect.CodeAlreadyExists, err)
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNoLeader),
		errors.Is(err, ErrUnavailable), errors.Is(err, ErrClockBehind):
		return connect.NewError(connect.CodeUnavailable, err)
	case errors.Is(err, ErrLeaseHeld), errors.Is(err, ErrLeaseLost):
		return connect.NewError(connect.CodeFailedPrecondition, err)
	case errors.Is(err, ErrWorkersExhausted):
		return connect.NewError(connect.CodeResourceExhausted, err)
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	}
	return connect.NewError(connect.CodeInternal, err)
}
