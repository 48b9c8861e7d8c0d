package errs

import (
	"context"
	"errors"

	"connectrpc.com/connect"
)

// Caller is who judges a failed call, because what another attempt can
// reach differs: the store has one leader that answers for the whole
// cluster, while any allocsvr can stand in for another.
type Caller uint8

const (
	// StoreCall is an allocsvr (or a tool or test harness) calling the
	// store. Writes carry an idempotency key (request_id), so an attempt
	// repeated after an ambiguous failure is applied at most once.
	StoreCall Caller = iota + 1
	// AllocCall is a client calling an allocsvr for segment IDs or
	// per-key sequences; another allocsvr answers the same.
	AllocCall
	// SnowflakeCall is a client calling an allocsvr for snowflake IDs:
	// as AllocCall, except that a worker lease is per allocsvr.
	SnowflakeCall
)

// Verdict is Judge's answer.
type Verdict struct {
	// Retry: another attempt (maybe at another member or endpoint) may
	// succeed where this one failed.
	Retry bool
	// Definite: the server refused the call, so it took no effect; a new
	// attempt may use a new idempotency key. Not definite: it may or may
	// not have taken effect, so a retry must send the same key.
	Definite bool
	// Why, for logs and tests.
	Why string
}

// Judge is the one retry policy of seqsvr: whether err, the failure of
// one attempt of a call made by c, is definite, worth retrying, and why.
// Callers check their own context first: a call whose caller gave up is
// not retried whatever Judge says.
//
// The code decides (Code's rules: the outermost kind, sentinel or
// *connect.Error, then a context error), wherever it was produced: the
// connect-go client itself reports transport failures as unavailable,
// unknown or canceled, which are retried. An error with no code at all
// (no kind, no *connect.Error, no context error) is a transport failure
// below Connect, and is retried by everyone.
//
// The rules, per code:
//
//   - unavailable, deadline_exceeded, aborted, unknown: no (certain)
//     answer. The server was unreachable, timed out, lost leadership
//     while committing, or sent something that is not a Connect answer.
//     Retried by everyone; never definite (a write may have committed).
//   - canceled: this attempt's own context, not the caller's (checked
//     first), or connect-go's report of a write into a connection the
//     peer closed. Retried, not definite.
//   - internal, data_loss: the server failed in a way it does not
//     classify (a bug, a failing disk). Not definite: it may have failed
//     after the write. A client retries it at another allocsvr, because
//     allocsvrs are interchangeable and one's fault is not another's. The
//     store is not asked again: its one leader would answer the same, and
//     every store caller already retries whole operations with backoff
//     (the segment loader, the worker renewal, the heartbeat), so an
//     inner retry would only hide the error until the deadline.
//   - failed_precondition: a definite refusal. For SnowflakeCall it is
//     retried at another allocsvr: it means this allocsvr's worker lease
//     is lost or not yet granted, and another's may be fine. For the
//     store (a worker lease or section held by another process) and for
//     segment and per-key calls, repeating the call cannot help.
//   - invalid_argument, out_of_range, not_found, already_exists,
//     resource_exhausted, permission_denied, unauthenticated,
//     unimplemented: definite answers about the request itself (or the
//     tag's used-up ID space, or the caller's token), the same from every
//     member. Never retried.
func Judge(c Caller, err error) Verdict {
	if err == nil {
		return Verdict{Why: "no failure"}
	}
	if outer(err) == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return Verdict{Retry: true, Why: "no answer: transport failure below Connect"}
	}
	switch code := Code(err); code {
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeAborted, connect.CodeUnknown:
		return Verdict{Retry: true, Why: code.String() + ": no certain answer; a write may have committed"}
	case connect.CodeCanceled:
		return Verdict{Retry: true, Why: "canceled: the attempt, not the caller, was cut short"}
	case connect.CodeInternal, connect.CodeDataLoss:
		if c == StoreCall {
			return Verdict{Why: code.String() + ": the store's one leader would answer the same; the caller's own loop retries later"}
		}
		return Verdict{Retry: true, Why: code.String() + ": one allocsvr's fault; another may answer"}
	case connect.CodeFailedPrecondition:
		if c == SnowflakeCall {
			return Verdict{Retry: true, Definite: true, Why: "failed_precondition: this allocsvr's worker lease is lost; another's may not be"}
		}
		return Verdict{Definite: true, Why: "failed_precondition: refused; repeating cannot help"}
	default:
		return Verdict{Definite: true, Why: code.String() + ": a definite answer about the request, the same everywhere"}
	}
}
