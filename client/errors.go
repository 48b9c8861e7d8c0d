package client

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// ErrClosed is returned by calls on a Client after Close.
var ErrClosed = errors.New("client: closed")

// Code is the Connect code of an error a Client returned:
// connect.CodeInvalidArgument, connect.CodeNotFound,
// connect.CodeUnauthenticated, connect.CodeDeadlineExceeded and so on
// (the table is in the package documentation), or 0 for nil.
func Code(err error) connect.Code {
	if err == nil {
		return 0
	}
	return connect.CodeOf(err)
}

// caller is who a call is for errs.Judge: a snowflake call also retries
// failed_precondition (one allocsvr's worker lease is lost, another's is
// not).
func caller(snowflake bool) errs.Caller {
	if snowflake {
		return errs.SnowflakeCall
	}
	return errs.AllocCall
}

// ctxError is what a call answers when the caller's context ends before
// a success: deadline_exceeded or canceled, naming the last failure.
func ctxError(ctx context.Context, what string, last error) error {
	code := connect.CodeDeadlineExceeded
	if errors.Is(ctx.Err(), context.Canceled) {
		code = connect.CodeCanceled
	}
	if last == nil {
		return connect.NewError(code, fmt.Errorf("%s: %w", what, ctx.Err()))
	}
	return connect.NewError(code, fmt.Errorf("%s: %w (last attempt: %v)", what, ctx.Err(), last))
}

func invalid(format string, args ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}

var errShort = errors.New("client: the answer holds fewer values than keys asked")
