package harness

import (
	"fmt"
	"testing"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// A Leaf answer's status reads back as the code the server's error had,
// so the checkers (the burned-ID check's own answers, not_found) see a
// Leaf call's failure as they see the same call's over Connect.
func TestLeafCodeInvertsHTTPStatus(t *testing.T) {
	for _, k := range []*errs.Kind{errs.InvalidArgument, errs.NotFound, errs.AlreadyExists, errs.FailedPrecondition,
		errs.ResourceExhausted, errs.Unauthenticated, errs.PermissionDenied, errs.Unavailable} {
		err := fmt.Errorf("%w: tag %q", k, "x")
		if got := leafCode(errs.HTTPStatus(err)); got != k.Code() {
			t.Errorf("%v: status %d reads back as %v", k.Code(), errs.HTTPStatus(err), got)
		}
	}
	if got := leafCode(500); got != connect.CodeInternal {
		t.Errorf("500 reads back as %v", got)
	}
}
