package storage

import (
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// connectCode is the code a client sees for err, as a string.
func connectCode(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code().String()
	}
	return "not a connect error"
}

// The contract's code for each of the store's own errors.
func TestSentinelCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind *errs.Kind
	}{
		{ErrNotLeader, errs.Unavailable},
		{ErrNoLeader, errs.Unavailable},
		{ErrMemberHeld, errs.FailedPrecondition},
	} {
		if !errors.Is(c.err, c.kind) || errs.Code(c.err) != c.kind.Code() {
			t.Errorf("%v: code %v, want %v", c.err, errs.Code(c.err), c.kind.Code())
		}
	}
}

func TestMapRaftErr(t *testing.T) {
	if got := mapRaftErr(raft.ErrNotLeader); got != ErrNotLeader {
		t.Fatalf("ErrNotLeader mapped to %v (must stay forwardable)", got)
	}
	for _, e := range []error{raft.ErrLeadershipLost, raft.ErrRaftShutdown, raft.ErrEnqueueTimeout, raft.ErrLeadershipTransferInProgress, errors.New("other")} {
		got := mapRaftErr(e)
		if !errors.Is(got, errs.Unavailable) || errors.Is(got, ErrNotLeader) {
			t.Errorf("%v mapped to %v", e, got)
		}
	}
	if msg := mapRaftErr(raft.ErrLeadershipLost).Error(); !strings.Contains(msg, "may have committed") || !strings.Contains(msg, "request_id") {
		t.Errorf("leadership lost message %q does not tell the client to retry with the same request_id", msg)
	}
}
