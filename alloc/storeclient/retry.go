package storeclient

import "github.com/seqsvr/seqsvr/internal/errs"

// retryable reports whether another attempt (maybe at another member) may
// succeed: errs.Judge's rule for a store call. err is a store answer
// mapped by errs.FromConnect; transport failures, no leader and
// per-attempt timeouts all map to unavailable. Only the caller's own
// context ending stops the retries, and invoke checks that first.
func retryable(err error) bool {
	return errs.Judge(errs.StoreCall, err).Retry
}
