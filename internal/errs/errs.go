// Package errs is the one error vocabulary of seqsvr, shared by storage,
// alloc and the binaries. Every business error wraps one of the kinds
// below (directly, or through a package's own sentinel made with New);
// Connect, FromConnect and HTTPStatus are the only mappings between those
// kinds, Connect codes and the Leaf API's HTTP statuses.
//
// Messages: the text of a kind-wrapped error is written for the client
// ("invalid argument: count 0 out of range 1..10000"). Connect puts its own
// code in front of the message ("invalid_argument: ..."), so Connect sends
// Detail, the text without the leading kind ("count 0 out of range
// 1..10000"); the Leaf API, which has only a status and one line, sends
// Message, the whole text. An error that wraps no kind is an internal
// failure: the client gets the stable text "internal error" and the detail
// goes to the log.
//
// Retrying: Judge is the one rule deciding whether a failed call is
// retried and whether it took no effect, and Retry the one loop that
// repeats a call under it (Backoff its pauses); no other package decides
// by code whether to try again.
package errs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// Kind is an error class with its Connect code. The kinds are the
// package-level variables below; compare with errors.Is.
type Kind struct {
	code connect.Code
	text string
}

func (k *Kind) Error() string { return k.text }

// Code is the kind's Connect code.
func (k *Kind) Code() connect.Code { return k.code }

// The kinds, one per Connect code the contract uses.
var (
	InvalidArgument    = &Kind{connect.CodeInvalidArgument, "invalid argument"}
	NotFound           = &Kind{connect.CodeNotFound, "not found"}
	AlreadyExists      = &Kind{connect.CodeAlreadyExists, "already exists"}
	FailedPrecondition = &Kind{connect.CodeFailedPrecondition, "failed precondition"}
	ResourceExhausted  = &Kind{connect.CodeResourceExhausted, "resource exhausted"}
	Unauthenticated    = &Kind{connect.CodeUnauthenticated, "unauthenticated"}
	PermissionDenied   = &Kind{connect.CodePermissionDenied, "permission denied"}
	// Unavailable is retryable. A write that failed with it may or may not
	// have taken effect: retry with the same idempotency key.
	Unavailable = &Kind{connect.CodeUnavailable, "unavailable"}
)

// Sentinel is a package's own named error of one kind, such as storage's
// "not the raft leader" (Unavailable). errors.Is matches both the sentinel
// and its kind.
type Sentinel struct {
	kind *Kind
	text string
}

// New makes a sentinel of kind k.
func New(k *Kind, text string) *Sentinel { return &Sentinel{kind: k, text: text} }

func (s *Sentinel) Error() string { return s.text }

// Unwrap exposes the kind to errors.Is and errors.As.
func (s *Sentinel) Unwrap() error { return s.kind }

// Code is the sentinel's Connect code.
func (s *Sentinel) Code() connect.Code { return s.kind.code }

// coder is implemented by *Kind, *Sentinel and *connect.Error.
type coder interface{ Code() connect.Code }

// outer is the first *Kind, *Sentinel or *connect.Error walking err's
// chain from the outside: it alone decides the code, so the order of
// checks can never differ between callers.
func outer(err error) coder {
	var c coder
	if errors.As(err, &c) {
		return c
	}
	return nil
}

// Code is err's Connect code: that of the outermost kind, sentinel or
// *connect.Error in its chain, then of a context error, else Internal.
// A nil error has code 0 (none).
func Code(err error) connect.Code {
	switch c := outer(err); {
	case err == nil:
		return 0
	case c != nil:
		return c.Code()
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	}
	return connect.CodeInternal
}

// internalText is all a client sees of an error that wraps no kind.
const internalText = "internal error"

// Connect maps err to the error a Connect handler returns. A
// *connect.Error outermost in the chain (the leader's answer to a
// forwarded call) passes through unchanged. An internal error is logged
// with its detail and answered with a stable message.
func Connect(err error) error {
	if err == nil {
		return nil
	}
	if ce, ok := outer(err).(*connect.Error); ok {
		return ce
	}
	code := Code(err)
	if code == connect.CodeInternal {
		slog.Error("internal error", "err", err)
		return connect.NewError(code, errors.New(internalText))
	}
	return connect.NewError(code, &detailed{text: Detail(err), err: err})
}

// detailed gives a Connect error its client text (Detail) while keeping
// the chain, so errors.Is still finds the kind on the server side.
type detailed struct {
	text string
	err  error
}

func (d *detailed) Error() string { return d.text }
func (d *detailed) Unwrap() error { return d.err }

// Detail is the text a Connect client is given for err after the code
// Connect writes itself: Message without a leading kind text, so a client
// reads "unavailable: tag \"a\": buffers empty", never "unavailable:
// unavailable: ...". A kind with nothing after it keeps its text.
func Detail(err error) string {
	msg := Message(err)
	if k, ok := outer(err).(*Kind); ok {
		if rest, cut := strings.CutPrefix(msg, k.text+": "); cut && rest != "" {
			return rest
		}
	}
	return msg
}

// Message is the one-line text a client is given for err where no code
// travels with it (the Leaf API's body): its own text, which starts with
// its kind, for a classified error; the stable internal text otherwise.
func Message(err error) string {
	if ce, ok := outer(err).(*connect.Error); ok {
		return ce.Message()
	}
	if Code(err) == connect.CodeInternal {
		return internalText
	}
	return err.Error()
}

// Remote is an error answered by another seqsvr process (the allocsvr's
// view of a store answer): the call that failed, the kind its code maps to
// and the *connect.Error itself. errors.Is finds the kind; errors.As finds
// the *connect.Error.
type Remote struct {
	Call string
	kind *Kind // nil when the code maps to no kind (internal, unimplemented...)
	err  error
}

func (e *Remote) Error() string { return fmt.Sprintf("%s: %v", e.Call, e.err) }

func (e *Remote) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// FromConnect wraps an error returned by a Connect client call so the
// caller can test it with errors.Is against the kinds. Transport failures,
// timeouts and aborted calls count as Unavailable: the remote may be fine
// a moment later.
func FromConnect(call string, err error) error {
	if err == nil {
		return nil
	}
	return &Remote{Call: call, kind: kindOf(connect.CodeOf(err)), err: err}
}

func kindOf(code connect.Code) *Kind {
	switch code {
	case connect.CodeInvalidArgument, connect.CodeOutOfRange:
		return InvalidArgument
	case connect.CodeNotFound:
		return NotFound
	case connect.CodeAlreadyExists:
		return AlreadyExists
	case connect.CodeFailedPrecondition:
		return FailedPrecondition
	case connect.CodeResourceExhausted:
		return ResourceExhausted
	case connect.CodeUnauthenticated:
		return Unauthenticated
	case connect.CodePermissionDenied:
		return PermissionDenied
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeAborted, connect.CodeUnknown:
		return Unavailable
	}
	return nil
}

// HTTPStatus is the Leaf API's status for err (Leaf clients only parse the
// body of a 200, so any non-200 is an error to them).
func HTTPStatus(err error) int {
	switch Code(err) {
	case 0:
		return http.StatusOK
	case connect.CodeInvalidArgument:
		return http.StatusBadRequest
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists:
		return http.StatusConflict
	case connect.CodeFailedPrecondition:
		return http.StatusPreconditionFailed
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeUnavailable, connect.CodeCanceled:
		return http.StatusServiceUnavailable
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeDeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Recovered is the answer to a panic p in the handler of procedure, for
// connect-go (RecoverOption) and the HTTP/1.1 front alike: the panic is
// logged with the procedure, and the client gets internal with the stable
// text, so a bug in one request never kills the process nor leaks detail.
// A nil logger means slog.Default().
func Recovered(ctx context.Context, logger *slog.Logger, procedure string, p any) error {
	if logger == nil {
		logger = slog.Default()
	}
	logger.ErrorContext(ctx, "panic in handler", "procedure", procedure, "panic", fmt.Sprint(p))
	return connect.NewError(connect.CodeInternal, errors.New(internalText))
}

// RecoverOption is Recovered as a connect-go handler option.
func RecoverOption(logger *slog.Logger) connect.HandlerOption {
	return connect.WithRecover(func(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
		return Recovered(ctx, logger, spec.Procedure, p)
	})
}
