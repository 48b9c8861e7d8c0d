package alloc

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
)

// storeError is a store answer: the store's *connect.Error (code kept) plus
// the allocator's sentinel for that code, both reachable via errors.Is/As.
type storeError struct {
	method   string
	sentinel error // nil when no sentinel matches (already_exists, internal, ...)
	err      error
}

func (e *storeError) Error() string { return fmt.Sprintf("store %s: %v", e.method, e.err) }

func (e *storeError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.err}
	}
	return []error{e.sentinel, e.err}
}

func storeMapError(method string, err error) error {
	return &storeError{method: method, sentinel: storeSentinel(connect.CodeOf(err)), err: err}
}

func storeSentinel(code connect.Code) error {
	switch code {
	case connect.CodeNotFound:
		return ErrNotFound
	case connect.CodeInvalidArgument, connect.CodeOutOfRange:
		return ErrInvalidArgument
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeAborted, connect.CodeUnknown:
		return ErrUnavailable
	case connect.CodeFailedPrecondition:
		return ErrFailedPrecondition
	case connect.CodeResourceExhausted:
		return ErrExhausted
	}
	return nil
}

// storeRetryable reports whether another attempt (maybe at another member)
// may succeed: transport failures, no leader, per-attempt timeouts.
func storeRetryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeUnknown, connect.CodeDeadlineExceeded,
		connect.CodeAborted, connect.CodeCanceled:
		return true
	}
	return false
}

// storeDefinite reports whether err is a definite refusal: the store did
// not perform the call, so a new attempt needs no idempotency key reuse.
// Timeouts and transport errors are not definite: the call may have been
// committed.
func storeDefinite(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		return false
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidArgument) ||
		errors.Is(err, ErrFailedPrecondition) || errors.Is(err, ErrExhausted) {
		return true
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		switch ce.Code() {
		case connect.CodeAlreadyExists, connect.CodePermissionDenied, connect.CodeUnauthenticated,
			connect.CodeUnimplemented:
			return true
		}
	}
	return false
}
