package fsm

import (
	"bytes"
	"io"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func noopAt(v uint32) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{ClusterVersion: v}}}
}

// The cluster version starts at the base level, is raised by a Noop, never
// goes down, and survives a snapshot.
func TestClusterVersionRaiseAndSnapshot(t *testing.T) {
	m := New(nil)
	if v := m.ClusterVersion(); v != BaseLevel {
		t.Fatalf("fresh: %d, want %d", v, BaseLevel)
	}
	m.applyCommand(noopAt(2), 1, 1)
	m.applyCommand(noopAt(1), 2, 1)
	m.applyCommand(noopAt(0), 3, 1)
	if v := m.ClusterVersion(); v != 2 {
		t.Fatalf("after raise to 2 and stale 1, 0: %d", v)
	}
	r := New(nil)
	if err := r.Restore(io.NopCloser(bytes.NewReader(persist(t, m)))); err != nil {
		t.Fatal(err)
	}
	if v := r.ClusterVersion(); v != 2 {
		t.Fatalf("restored: %d, want 2", v)
	}
}

// baseFields is every field of raft.proto's commands the base release
// knows (jepsen/upgrade-base), plus later ones that every base-release
// member applies the same way (it ignores them harmlessly); a field not
// listed needs a level, registered with its command (commands.go).
var baseFields = map[string]bool{
	"seqsvr.v1.NoopCommand.cluster_version": true, // the raise: a no-op to the base release
	"seqsvr.v1.NoopCommand.cluster_id":      true, // the cluster ID: first applied wins, re-proposed each term
}

// TestCommandLevelKnowsEveryField fails when a field is added to a Raft
// command without a decision on the level it needs.
func TestCommandLevelKnowsEveryField(t *testing.T) {
	base := map[string]int{
		"seqsvr.v1.Command": 13, "seqsvr.v1.CreateTagCommand": 4, "seqsvr.v1.UpdateTagCommand": 3,
		"seqsvr.v1.DeleteTagCommand": 1, "seqsvr.v1.ReserveSegmentCommand": 4, "seqsvr.v1.RegisterWorkerCommand": 5,
		"seqsvr.v1.RenewWorkerCommand": 5, "seqsvr.v1.SetMemberCommand": 3, "seqsvr.v1.RemoveMemberCommand": 1,
		"seqsvr.v1.NoopCommand": 0, "seqsvr.v1.CreateSpaceCommand": 5, "seqsvr.v1.SeqHeartbeatCommand": 6,
		"seqsvr.v1.RaiseSectionsCommand": 4,
	}
	cmd := (&seqsvrv1.Command{}).ProtoReflect().Descriptor()
	msgs := []protoreflect.MessageDescriptor{cmd}
	for i := 0; i < cmd.Oneofs().ByName("cmd").Fields().Len(); i++ {
		msgs = append(msgs, cmd.Oneofs().ByName("cmd").Fields().Get(i).Message())
	}
	for _, md := range msgs {
		n, known := base[string(md.FullName())]
		if !known {
			t.Errorf("%s: a command the base release does not know: a base-release member panics on it; register it (commands.go) with a level above BaseLevel, then list it here", md.FullName())
			continue
		}
		extra := 0
		for i := 0; i < md.Fields().Len(); i++ {
			if baseFields[string(md.Fields().Get(i).FullName())] {
				extra++
			}
		}
		if got := md.Fields().Len() - extra; got != n {
			t.Errorf("%s has %d fields the base release did not have and that are not classified: give the command a level (commands.go) that covers them (or list each in baseFields if an old member applies it the same way)", md.FullName(), got-n)
		}
	}
}
