package fsm

import (
	"errors"
	"testing"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// The contract's code for each of the state machine's own errors.
func TestSentinelCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind *errs.Kind
	}{
		{ErrClockBehind, errs.Unavailable},
		{ErrLeaseHeld, errs.FailedPrecondition},
		{ErrLeaseLost, errs.FailedPrecondition},
		{ErrWorkersExhausted, errs.ResourceExhausted},
		{ErrSeqNodeHeld, errs.FailedPrecondition},
		{ErrNotSectionOwner, errs.FailedPrecondition},
	} {
		if !errors.Is(c.err, c.kind) || errs.Code(c.err) != c.kind.Code() {
			t.Errorf("%v: code %v, want %v", c.err, errs.Code(c.err), c.kind.Code())
		}
	}
}
