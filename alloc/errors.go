package alloc

import (
	"context"
	"errors"

	"connectrpc.com/connect"
)

// Sentinel errors of the allocator. Wrap them with fmt.Errorf("%w: ...") to
// add detail; ConnectError maps them to the contract's Connect codes.
var (
	// ErrInvalidArgument: bad tag name, count out of range, bad ID.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: the tag does not exist in the store.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the store cannot be reached and the buffers are empty,
	// or the clock moved backwards beyond the tolerance. Retryable.
	ErrUnavailable = errors.New("unavailable")
	// ErrFailedPrecondition: the snowflake worker lease is lost (self-fenced)
	// or the node-id is held by another live process.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrExhausted: no snowflake worker ID can be had.
	ErrExhausted = errors.New("resource exhausted")
)

// ConnectError maps an allocator error to a *connect.Error with the
// contract's code. Errors that already are *connect.Error (from the store
// client) keep their code.
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
	case errors.Is(err, ErrUnavailable):
		return connect.NewError(connect.CodeUnavailable, err)
	case errors.Is(err, ErrFailedPrecondition):
		return connect.NewError(connect.CodeFailedPrecondition, err)
	case errors.Is(err, ErrExhausted):
		return connect.NewError(connect.CodeResourceExhausted, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.As(err, &ce):
		return ce
	}
	return connect.NewError(connect.CodeInternal, err)
}
