package storage

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// newerCommand is a Command as a newer release would build it: its case
// is field 22, which this binary's proto does not declare.
func newerCommand() *seqsvrv1.Command {
	cmd := &seqsvrv1.Command{}
	b := protowire.AppendTag(nil, 22, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte{0x0a, 0x01, 'x'})
	cmd.ProtoReflect().SetUnknown(b)
	return cmd
}

// The leader refuses to propose a command this binary does not know:
// nothing reaches the log.
func TestUnknownCommandRefusedBeforeProposing(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader()
	last := leader.store.raft.LastIndex()
	_, err := leader.store.propose(context.Background(), newerCommand())
	if !errors.Is(err, fsm.ErrUnknownCommand) || !errors.Is(err, errs.FailedPrecondition) {
		t.Fatalf("propose: %v, want ErrUnknownCommand (failed_precondition)", err)
	}
	if !strings.Contains(err.Error(), "field 22") {
		t.Errorf("the refusal does not name the field: %v", err)
	}
	if got := leader.store.raft.LastIndex(); got != last {
		t.Fatalf("the log grew from %d to %d", last, got)
	}
}

// A member that meets an unknown command in its committed log stops: it
// logs the entry, naming the field and the levels, and exits 1 (here the
// exit is recorded, not taken); it neither panics nor skips the entry.
func TestUnknownEntryStopsTheMember(t *testing.T) {
	var logs syncBuffer
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	leader := c.waitForLeader()
	codes := make(chan int, 4)
	leader.store.exit = func(code int) { codes <- code }
	before := stateOnly(leader.store.fsm.State())
	b, err := proto.Marshal(newerCommand())
	if err != nil {
		t.Fatal(err)
	}
	// Past the gate, as a newer leader's entry would arrive.
	_ = leader.store.raft.Apply(b, 5*time.Second).Error()
	select {
	case code := <-codes:
		if code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not stop")
	}
	for _, want := range []string{"stopping", "field 22", "feature level 2", "cluster version", "binary_level=2"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not name %q:\n%s", want, logs.String())
		}
	}
	if !proto.Equal(before, stateOnly(leader.store.fsm.State())) {
		t.Error("the state changed")
	}
	if err := leader.store.raft.Snapshot().Error(); err == nil {
		t.Error("a snapshot covered the entry the member did not apply")
	}
}

// The real exit: a process whose state machine meets an unknown command
// exits 1 and says why on its log, without a panic.
func TestUnknownEntryExitsTheProcess(t *testing.T) {
	if os.Getenv("SEQSVR_TEST_APPLY_STOP") == "1" {
		s := &Store{log: slog.New(slog.NewTextHandler(os.Stderr, nil)), exit: os.Exit}
		m := fsm.New(nil, fsm.OnFatal(s.stopApplying))
		b, _ := proto.Marshal(newerCommand())
		m.Apply(&raft.Log{Index: 9, Term: 2, Type: raft.LogCommand, Data: b})
		return // not reached when the member stops
	}
	if testing.Short() {
		t.Skip("runs a process; skipped with -short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnknownEntryExitsTheProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SEQSVR_TEST_APPLY_STOP=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want code 1; output:\n%s", err, out)
	}
	for _, want := range []string{"raft entry 9 (term 2", "field 22", "feature level 2"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not name %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "panic") {
		t.Errorf("the process panicked:\n%s", out)
	}
}
