package fsm

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// registeredSamples is one command of every registered case, in an order
// in which each applies to the state the ones before it left.
func registeredSamples() []*seqsvrv1.Command {
	return []*seqsvrv1.Command{
		wrap(&seqsvrv1.SetMemberCommand{Id: "n1", RaftAddr: "r1", HttpAddr: "h1"}),
		wrap(&seqsvrv1.NoopCommand{ClusterId: "c1", ClusterVersion: Level}),
		createCmd("t", 0, 10),
		wrap(&seqsvrv1.UpdateTagCommand{Tag: "t", Step: 20}),
		reserveCmd("t", 5, "r1", 0),
		registerCmd("w1", "i1", 1000, 100, 1000),
		renewCmd("w1", 0, "i1", 1010, 100),
		spaceCmd("s", 4, 1, 10),
		hbCmd("a", "a1", false),
		raiseCmd("a", "a1", "s", 0, -1),
		wrap(&seqsvrv1.DeleteTagCommand{Tag: "t"}),
		wrap(&seqsvrv1.RemoveMemberCommand{Id: "n1"}),
	}
}

// stateBytes is the state without the last-applied marks, which every
// applied command moves.
func stateBytes(t *testing.T, f *Machine) []byte {
	t.Helper()
	snap := f.State()
	snap.LastIndex, snap.LastTerm, snap.LastNowMs = 0, 0, 0
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every case of Command's oneof is registered once, and every registered
// command applies through the table (no Raft): it succeeds and changes
// the state. The samples cover the registry exactly, so a command
// registered without a sample here fails this test.
func TestCommandRegistryApplies(t *testing.T) {
	fields := cmdOneof.Fields()
	if len(commands) != fields.Len() {
		t.Errorf("%d commands registered, Command's oneof has %d cases", len(commands), fields.Len())
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		c, ok := commands[fd.Number()]
		if !ok || c.field != fd {
			t.Errorf("case %s (field %d) is not registered", fd.Name(), fd.Number())
		}
	}
	f := New(nil)
	seen := map[string]bool{}
	for i, cmd := range registeredSamples() {
		name := string(cmd.ProtoReflect().WhichOneof(cmdOneof).Name())
		seen[name] = true
		if err := CheckCommand(cmd, Limits{}); err != nil {
			t.Errorf("%s: check: %v", name, err)
		}
		if l, err := CommandLevel(cmd); err != nil || l != BaseLevel {
			t.Errorf("%s: level %d, %v; want %d", name, l, err, BaseLevel)
		}
		before := stateBytes(t, f)
		if r := applyAt(t, f, int64(1000+i), cmd); r.Err != nil {
			t.Fatalf("%s: %v", name, r.Err)
		}
		if bytes.Equal(before, stateBytes(t, f)) {
			t.Errorf("%s: applied, but the state did not change", name)
		}
	}
	for i := 0; i < fields.Len(); i++ {
		if n := string(fields.Get(i).Name()); !seen[n] {
			t.Errorf("registered command %s has no sample here", n)
		}
	}
}

// newerEntry is a Command as a newer release would write it: its case is
// field 22, which this binary's proto does not declare.
func newerEntry(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&seqsvrv1.Command{NowMs: 5})
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendTag(b, 22, protowire.BytesType)
	return protowire.AppendBytes(b, []byte{0x0a, 0x01, 'x'})
}

// An unknown command is refused before it is proposed (CommandLevel,
// CheckCommand); a member that meets one in its log stops: OnFatal is
// told once, naming the case and the levels; nothing changes, then or
// after; it never panics; and no snapshot can cover the entry it did
// not apply.
func TestUnknownCommandStops(t *testing.T) {
	empty, _ := proto.Marshal(&seqsvrv1.Command{NowMs: 5})
	for _, c := range []struct {
		name string
		data []byte
		want []string // in the error handed to OnFatal
	}{
		{"newer release's case", newerEntry(t), []string{"unknown raft command", "field 22", "feature level 2", "cluster version 2", "raft entry 7 (term 3"}},
		{"no case", empty, []string{"unknown raft command", "no case set", "feature level 2", "raft entry 7"}},
		{"undecodable", []byte{0xff, 0xff, 0xff}, []string{"undecodable raft entry 7 (term 3)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var told []error
			f := New(nil, OnFatal(func(err error) { told = append(told, err) }))
			mustApply(t, f, 100, noopAt(Level))
			mustApply(t, f, 100, createCmd("t", 0, 10))
			before, last := stateBytes(t, f), f.State().GetLastIndex()

			var cmd seqsvrv1.Command
			if proto.Unmarshal(c.data, &cmd) == nil {
				if _, err := CommandLevel(&cmd); !errors.Is(err, ErrUnknownCommand) {
					t.Errorf("level gate: %v, want ErrUnknownCommand", err)
				}
				if err := CheckCommand(&cmd, Limits{}); !errors.Is(err, ErrUnknownCommand) {
					t.Errorf("check: %v, want ErrUnknownCommand", err)
				}
			}

			r := f.Apply(&raft.Log{Index: 7, Term: 3, Type: raft.LogCommand, Data: c.data}).(Result)
			if len(told) != 1 {
				t.Fatalf("OnFatal called %d times, want 1", len(told))
			}
			for _, w := range c.want {
				if !strings.Contains(told[0].Error(), w) {
					t.Errorf("OnFatal got %q, want it to name %q", told[0], w)
				}
			}
			if c.name != "undecodable" && !errors.Is(told[0], ErrUnknownCommand) {
				t.Errorf("OnFatal got %v, want ErrUnknownCommand", told[0])
			}
			if !errors.Is(r.Err, errs.Unavailable) {
				t.Errorf("result %v, want unavailable", r.Err)
			}
			// Stopped: later entries change nothing and tell no one again.
			r = applyAt(t, f, 200, reserveCmd("t", 5, "r1", 0))
			if !errors.Is(r.Err, errs.Unavailable) {
				t.Errorf("entry after the stop: %v, want unavailable", r.Err)
			}
			if len(told) != 1 {
				t.Errorf("OnFatal called %d times, want 1", len(told))
			}
			if !bytes.Equal(before, stateBytes(t, f)) || f.State().GetLastIndex() != last {
				t.Error("the state changed after the stop")
			}
			if _, err := f.Snapshot(); err == nil {
				t.Error("a stopped machine took a snapshot")
			}
			if err := f.Restore(io.NopCloser(bytes.NewReader(persist(t, New(nil))))); err == nil {
				t.Error("a stopped machine restored a snapshot")
			}
		})
	}
}

// A case this binary's proto declares but does not register is named by
// its name and number.
func TestDescribeUnknownNamesTheCase(t *testing.T) {
	cmd := wrap(&seqsvrv1.CreateSpaceCommand{Space: "s"})
	m := cmd.ProtoReflect()
	if got := describeUnknown(m, m.WhichOneof(cmdOneof)); got != "command create_space (field 19)" {
		t.Fatalf("got %q", got)
	}
}
