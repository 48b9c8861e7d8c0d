package fsm

import (
	"errors"
	"slices"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// seqTTL is the per-key sequence lease the FSM tests grant.
const seqTTL = 100

func spaceCmd(name string, keys, size uint64, step int64) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateSpace{CreateSpace: &seqsvrv1.CreateSpaceCommand{
		Space: name, KeyCount: keys, SectionSize: size, Step: step}}}
}

func hbCmd(node, instance string, leaving bool, released ...*seqsvrv1.SectionSpan) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SeqHeartbeat{SeqHeartbeat: &seqsvrv1.SeqHeartbeatCommand{
		NodeId: node, InstanceId: instance, Url: "http://" + node, Leaving: leaving, Released: released, LeaseTtlMs: seqTTL}}}
}

func span(space string, first, last uint64) *seqsvrv1.SectionSpan {
	return &seqsvrv1.SectionSpan{Space: space, FirstSection: first, LastSection: last}
}

// raiseCmd raises sections given as section, known_max pairs.
func raiseCmd(node, instance, space string, pairs ...int64) *seqsvrv1.Command {
	c := &seqsvrv1.RaiseSectionsCommand{NodeId: node, InstanceId: instance, Space: space}
	for i := 0; i+1 < len(pairs); i += 2 {
		c.Sections = append(c.Sections, &seqsvrv1.SectionRaise{Section: uint64(pairs[i]), KnownMax: pairs[i+1]})
	}
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RaiseSections{RaiseSections: c}}
}

// mustApply applies cmd at now and fails the test on an error result.
func mustApply(t *testing.T, f *Machine, now int64, cmd *seqsvrv1.Command) Result {
	t.Helper()
	r := applyAt(t, f, now, cmd)
	if r.Err != nil {
		t.Fatalf("%v: %v", cmd, r.Err)
	}
	return r
}

// wantErr fails unless applying cmd at now is refused with an error of kind.
func wantErr(t *testing.T, f *Machine, now int64, cmd *seqsvrv1.Command, kind error) {
	t.Helper()
	if r := applyAt(t, f, now, cmd); !errors.Is(r.Err, kind) {
		t.Fatalf("%v: err %v, want %v", cmd, r.Err, kind)
	}
}

// routing is a space's runs and routing_version.
func routing(f *Machine, name string) (runs []run, version uint64) {
	f.read(func(st *fsmState) {
		if sp, ok := st.spaces[name]; ok {
			runs, version = append([]run(nil), sp.runs...), sp.routingVersion
		}
	})
	return runs, version
}

func maxSeq(f *Machine, name string, sec uint64) int64 {
	var v int64
	f.read(func(st *fsmState) { v = st.spaces[name].maxes[sec] })
	return v
}

func wantRuns(t *testing.T, f *Machine, name string, want ...run) {
	t.Helper()
	if got, _ := routing(f, name); !slices.Equal(got, want) {
		t.Fatalf("runs %+v, want %+v", got, want)
	}
}
