package storage

import (
	"bytes"
	"log/slog"
	"strings"

	"context"
	"errors"
	"fmt"
	"github.com/hashicorp/raft"
	"testing"

	"connectrpc.com/connect"
)

func connectCode(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code().String()
	}
	return "not a connect error"
}

func TestConnectError(t *testing.T) {
	passthrough := connect.NewError(connect.CodeAlreadyExists, errors.New("from the leader"))
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: x", ErrInvalidArgument), "invalid_argument"},
		{fmt.Errorf("%w: x", ErrNotFound), "not_found"},
		{ErrAlreadyExists, "already_exists"},
		{ErrNotLeader, "unavailable"},
		{ErrNoLeader, "unavailable"},
		{ErrUnavailable, "unavailable"},
		{ErrClockBehind, "unavailable"},
		{ErrLeaseHeld, "failed_precondition"},
		{ErrLeaseLost, "failed_precondition"},
		{ErrWorkersExhausted, "resource_exhausted"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{context.Canceled, "canceled"},
		{passthrough, "already_exists"},
		{errors.New("boom"), "internal"},
	} {
		if got := connectCode(ConnectError(c.err)); got != c.want {
			t.Errorf("%v: code %s, want %s", c.err, got, c.want)
		}
	}
	if ConnectError(nil) != nil {
		t.Error("nil error mapped to non-nil")
	}
	if ConnectError(passthrough) != passthrough {
		t.Error("a *connect.Error was not passed through unchanged")
	}
}

func TestMapRaftErr(t *testing.T) {
	if got := mapRaftErr(raft.ErrNotLeader); got != ErrNotLeader {
		t.Fatalf("ErrNotLeader mapped to %v (must stay forwardable)", got)
	}
	for _, e := range []error{raft.ErrLeadershipLost, raft.ErrRaftShutdown, raft.ErrEnqueueTimeout, raft.ErrLeadershipTransferInProgress, errors.New("other")} {
		got := mapRaftErr(e)
		if !errors.Is(got, ErrUnavailable) || errors.Is(got, ErrNotLeader) {
			t.Errorf("%v mapped to %v", e, got)
		}
	}
	if msg := mapRaftErr(raft.ErrLeadershipLost).Error(); !strings.Contains(msg, "may have committed") || !strings.Contains(msg, "request_id") {
		t.Errorf("leadership lost message %q does not tell the client to retry with the same request_id", msg)
	}
}

func TestHclogAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := newHclog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")
	l.Debug("hidden")
	l.Named("net").With("peer", "p1").Warn("careful", "k", 1)
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=careful") ||
		!strings.Contains(out, "logger=raft.net") || !strings.Contains(out, "peer=p1") || !strings.Contains(out, "k=1") {
		t.Fatalf("log output %q", out)
	}
	if l.IsDebug() || !l.IsInfo() {
		t.Fatal("levels not taken from the slog handler")
	}
}
