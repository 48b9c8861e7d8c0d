package storeclient

import (
	"errors"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// retryable reports whether another attempt (maybe at another member) may
// succeed: err is a store answer mapped by errs.FromConnect, and transport
// failures, no leader and per-attempt timeouts all map to Unavailable. A
// cancelled attempt is retried too: only the caller's own context ending
// stops the retries, and invoke checks that first.
func retryable(err error) bool {
	return errors.Is(err, errs.Unavailable) || errs.Code(err) == connect.CodeCanceled
}
