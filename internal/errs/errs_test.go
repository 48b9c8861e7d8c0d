package errs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
)

var errTestNotLeader = New(Unavailable, "not the raft leader")

func TestCodeAndStatus(t *testing.T) {
	remoteInternal := FromConnect("ReserveSegment", connect.NewError(connect.CodeInternal, errors.New("boom")))
	for _, tc := range []struct {
		name   string
		err    error
		code   connect.Code
		status int
	}{
		{"nil", nil, 0, http.StatusOK},
		{"kind", InvalidArgument, connect.CodeInvalidArgument, http.StatusBadRequest},
		{"wrapped kind", fmt.Errorf("%w: count 0", InvalidArgument), connect.CodeInvalidArgument, http.StatusBadRequest},
		{"sentinel", fmt.Errorf("propose: %w", errTestNotLeader), connect.CodeUnavailable, http.StatusServiceUnavailable},
		{"outermost kind wins", fmt.Errorf("%w: %w", NotFound, Unavailable), connect.CodeNotFound, http.StatusNotFound},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), connect.CodeDeadlineExceeded, http.StatusGatewayTimeout},
		{"kind beats context", fmt.Errorf("%w: %w", Unavailable, context.DeadlineExceeded), connect.CodeUnavailable, http.StatusServiceUnavailable},
		{"canceled", context.Canceled, connect.CodeCanceled, http.StatusServiceUnavailable},
		{"unclassified", errors.New("disk on fire"), connect.CodeInternal, http.StatusInternalServerError},
		{"remote aborted", FromConnect("ReserveSegment", connect.NewError(connect.CodeAborted, errors.New("x"))), connect.CodeUnavailable, http.StatusServiceUnavailable},
		{"remote not found", FromConnect("GetTag", connect.NewError(connect.CodeNotFound, errors.New("x"))), connect.CodeNotFound, http.StatusNotFound},
		{"remote internal keeps its code", remoteInternal, connect.CodeInternal, http.StatusInternalServerError},
		{"exhausted", ResourceExhausted, connect.CodeResourceExhausted, http.StatusTooManyRequests},
		{"unauthenticated", Unauthenticated, connect.CodeUnauthenticated, http.StatusUnauthorized},
		{"denied", PermissionDenied, connect.CodePermissionDenied, http.StatusForbidden},
		{"precondition", FailedPrecondition, connect.CodeFailedPrecondition, http.StatusPreconditionFailed},
	} {
		if got := Code(tc.err); got != tc.code {
			t.Errorf("%s: Code = %v, want %v", tc.name, got, tc.code)
		}
		if got := HTTPStatus(tc.err); got != tc.status {
			t.Errorf("%s: HTTPStatus = %d, want %d", tc.name, got, tc.status)
		}
		if tc.err != nil && connect.CodeOf(Connect(tc.err)) != tc.code {
			t.Errorf("%s: Connect code = %v, want %v", tc.name, connect.CodeOf(Connect(tc.err)), tc.code)
		}
	}
}

func TestSentinelMatchesKind(t *testing.T) {
	err := fmt.Errorf("apply: %w", errTestNotLeader)
	if !errors.Is(err, errTestNotLeader) || !errors.Is(err, Unavailable) || errors.Is(err, NotFound) {
		t.Fatalf("errors.Is on %v does not follow sentinel -> kind", err)
	}
}

func TestConnectMessages(t *testing.T) {
	if got := Connect(nil); got != nil {
		t.Fatalf("Connect(nil) = %v", got)
	}
	ce := new(connect.Error)
	if !errors.As(Connect(errors.New("secret path /var/x")), &ce) || ce.Message() != "internal error" {
		t.Fatalf("internal detail reached the client: %v", ce)
	}
	if got := Message(fmt.Errorf("%w: count 0", InvalidArgument)); got != "invalid argument: count 0" {
		t.Fatalf("Message = %q", got)
	}
	leader := connect.NewError(connect.CodeAlreadyExists, errors.New("tag order exists"))
	if got := Connect(leader); got != leader {
		t.Fatalf("a *connect.Error did not pass through: %v", got)
	}
	if !errors.Is(Connect(fmt.Errorf("%w: x", NotFound)), NotFound) {
		t.Fatal("Connect lost the kind for errors.Is")
	}
	remote := FromConnect("GetTag", connect.NewError(connect.CodeNotFound, errors.New("tag x")))
	if !errors.Is(remote, NotFound) || !errors.As(remote, &ce) || ce.Code() != connect.CodeNotFound {
		t.Fatalf("Remote does not expose kind and connect error: %v", remote)
	}
	if got := Message(remote); got != "GetTag: not_found: tag x" {
		t.Fatalf("Message(remote) = %q", got)
	}
}

// Connect writes the code itself, so the message it carries must not start
// with the kind again; the Leaf line (Message) keeps it.
func TestConnectMessageDropsKindText(t *testing.T) {
	sentinel := New(Unavailable, "not the raft leader")
	cases := []struct {
		name        string
		err         error
		wantConnect string // what a Connect client prints
		wantMessage string // the Leaf API's line
	}{
		{"kind then detail", fmt.Errorf("%w: store down", Unavailable), "unavailable: store down", "unavailable: store down"},
		{"invalid argument", fmt.Errorf("%w: count 0 out of range 1..10000", InvalidArgument), "invalid_argument: count 0 out of range 1..10000", "invalid argument: count 0 out of range 1..10000"},
		{"bare kind keeps its text", NotFound, "not_found: not found", "not found"},
		{"kind with empty detail keeps its text", fmt.Errorf("%w: ", NotFound), "not_found: not found: ", "not found: "},
		{"wrapped twice keeps the inner detail", fmt.Errorf("%w: tag %q: store failed: %w", Unavailable, "a", fmt.Errorf("%w: no leader", Unavailable)), `unavailable: tag "a": store failed: unavailable: no leader`, `unavailable: tag "a": store failed: unavailable: no leader`},
		{"sentinel text is not a kind prefix", fmt.Errorf("%w: term 3", sentinel), "unavailable: not the raft leader: term 3", "not the raft leader: term 3"},
		{"remote answer keeps its call", FromConnect("ReserveSegment", connect.NewError(connect.CodeUnavailable, errors.New("no leader"))), "unavailable: ReserveSegment: unavailable: no leader", "ReserveSegment: unavailable: no leader"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Connect(c.err)
			if got.Error() != c.wantConnect {
				t.Errorf("Connect(...).Error() = %q, want %q", got.Error(), c.wantConnect)
			}
			if !errors.Is(got, errs0(c.err)) {
				t.Errorf("Connect(...) lost the kind of %v", c.err)
			}
			if m := Message(c.err); m != c.wantMessage {
				t.Errorf("Message = %q, want %q", m, c.wantMessage)
			}
		})
	}
}

// errs0 is the outermost kind of err, for errors.Is.
func errs0(err error) error {
	var k *Kind
	if errors.As(err, &k) {
		return k
	}
	return err
}

// A panic is logged with its procedure and value, and the client gets
// internal with the stable text only.
func TestRecovered(t *testing.T) {
	var log strings.Builder
	err := Recovered(context.Background(), slog.New(slog.NewTextHandler(&log, nil)), "/p.S/M", "secret detail")
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInternal || ce.Message() != "internal error" {
		t.Fatalf("answered %v, want internal with the stable text", err)
	}
	if !strings.Contains(log.String(), "/p.S/M") || !strings.Contains(log.String(), "secret detail") {
		t.Fatalf("logged %q, want the procedure and the panic", log.String())
	}
}
