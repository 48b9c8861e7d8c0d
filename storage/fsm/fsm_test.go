package fsm

import (
	"errors"
	"math"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// cmds builds Commands tersely for the table tests.
func createCmd(tag string, start, step int64) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateTag{CreateTag: &seqsvrv1.CreateTagCommand{Tag: tag, Start: start, Step: step}}}
}

func reserveCmd(tag string, size int64, reqID string, limit int64) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_ReserveSegment{ReserveSegment: &seqsvrv1.ReserveSegmentCommand{Tag: tag, Size: size, RequestId: reqID, RecordLimit: limit}}}
}

func registerCmd(node, instance string, callerNow, ttl, retention int64) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RegisterWorker{RegisterWorker: &seqsvrv1.RegisterWorkerCommand{
		NodeId: node, InstanceId: instance, NowMs: callerNow, LeaseTtlMs: ttl, RetentionMs: retention}}}
}

func renewCmd(node string, worker int64, instance string, callerNow, ttl int64) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RenewWorker{RenewWorker: &seqsvrv1.RenewWorkerCommand{
		NodeId: node, WorkerId: worker, InstanceId: instance, NowMs: callerNow, LeaseTtlMs: ttl}}}
}

// applyAt applies cmd through the raft.FSM interface (encoded, as raft
// would) with the leader clock now.
func applyAt(t *testing.T, f *Machine, now int64, cmd *seqsvrv1.Command) Result {
	t.Helper()
	cmd = proto.Clone(cmd).(*seqsvrv1.Command)
	cmd.NowMs = now
	b, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: b}).(Result)
}

func maxID(f *Machine, tag string) int64 {
	var v int64 = -1
	f.read(func(st *fsmState) {
		if t, ok := st.tags[tag]; ok {
			v = t.GetMaxId()
		}
	})
	return v
}

func TestFSMTags(t *testing.T) {
	f := New(nil)
	steps := []struct {
		name    string
		cmd     *seqsvrv1.Command
		wantErr error
		check   func(t *testing.T, r Result)
	}{
		{"create", createCmd("a", 100, 10), nil, func(t *testing.T, r Result) {
			if r.Tag.GetMaxId() != 100 || r.Tag.GetStep() != 10 || r.Tag.GetUpdateTimeMs() != 1000 {
				t.Fatalf("created %v", r.Tag)
			}
		}},
		{"create default step", createCmd("b", 0, 0), nil, func(t *testing.T, r Result) {
			if r.Tag.GetStep() != DefaultStep {
				t.Fatalf("step %d, want %d", r.Tag.GetStep(), DefaultStep)
			}
		}},
		{"create duplicate", createCmd("a", 0, 5), errs.AlreadyExists, nil},
		{"create negative step", createCmd("c", 0, -1), errs.InvalidArgument, nil},
		{"reserve first segment", reserveCmd("a", 0, "", 0), nil, func(t *testing.T, r Result) {
			if r.Seg.GetFirst() != 101 || r.Seg.GetLast() != 110 {
				t.Fatalf("segment [%d,%d], want [101,110]", r.Seg.GetFirst(), r.Seg.GetLast())
			}
		}},
		{"reserve explicit size", reserveCmd("a", 5, "", 0), nil, func(t *testing.T, r Result) {
			if r.Seg.GetFirst() != 111 || r.Seg.GetLast() != 115 || r.Tag.GetMaxId() != 115 {
				t.Fatalf("segment %v tag %v", r.Seg, r.Tag)
			}
		}},
		{"reserve unknown tag", reserveCmd("nope", 1, "", 0), errs.NotFound, nil},
		{"reserve negative size", reserveCmd("a", -1, "", 0), errs.InvalidArgument, nil},
		{"update step and description", &seqsvrv1.Command{Cmd: &seqsvrv1.Command_UpdateTag{UpdateTag: &seqsvrv1.UpdateTagCommand{Tag: "a", Step: 20, Description: proto.String("d")}}}, nil,
			func(t *testing.T, r Result) {
				if r.Tag.GetStep() != 20 || r.Tag.GetDescription() != "d" || r.Tag.GetMaxId() != 115 {
					t.Fatalf("updated %v", r.Tag)
				}
			}},
		{"update keeps unset fields", &seqsvrv1.Command{Cmd: &seqsvrv1.Command_UpdateTag{UpdateTag: &seqsvrv1.UpdateTagCommand{Tag: "a"}}}, nil,
			func(t *testing.T, r Result) {
				if r.Tag.GetStep() != 20 || r.Tag.GetDescription() != "d" {
					t.Fatalf("updated %v", r.Tag)
				}
			}},
		{"update unknown", &seqsvrv1.Command{Cmd: &seqsvrv1.Command_UpdateTag{UpdateTag: &seqsvrv1.UpdateTagCommand{Tag: "zz", Step: 1}}}, errs.NotFound, nil},
		{"reserve uses new step", reserveCmd("a", 0, "", 0), nil, func(t *testing.T, r Result) {
			if r.Seg.GetFirst() != 116 || r.Seg.GetLast() != 135 {
				t.Fatalf("segment %v", r.Seg)
			}
		}},
		{"delete", &seqsvrv1.Command{Cmd: &seqsvrv1.Command_DeleteTag{DeleteTag: &seqsvrv1.DeleteTagCommand{Tag: "b"}}}, nil, nil},
		{"delete again", &seqsvrv1.Command{Cmd: &seqsvrv1.Command_DeleteTag{DeleteTag: &seqsvrv1.DeleteTagCommand{Tag: "b"}}}, errs.NotFound, nil},
		{"noop", &seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{}}}, nil, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := applyAt(t, f, 1000, s.cmd)
			if !errors.Is(r.Err, s.wantErr) || (s.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err %v, want %v", r.Err, s.wantErr)
			}
			if s.check != nil {
				s.check(t, r)
			}
		})
	}
	if got := maxID(f, "b"); got != -1 {
		t.Fatalf("deleted tag still present with max_id %d", got)
	}
}

func TestFSMReserveOverflowChangesNothing(t *testing.T) {
	f := New(nil)
	applyAt(t, f, 1, createCmd("o", math.MaxInt64-10, 10))
	if r := applyAt(t, f, 2, reserveCmd("o", 10, "x", 0)); r.Err != nil || r.Seg.GetLast() != math.MaxInt64 {
		t.Fatalf("last exact segment: %v %v", r.Seg, r.Err)
	}
	if r := applyAt(t, f, 3, reserveCmd("o", 1, "y", 0)); !errors.Is(r.Err, errs.ResourceExhausted) {
		t.Fatalf("overflow: err %v, want resource exhausted", r.Err)
	}
	if got := maxID(f, "o"); got != math.MaxInt64 {
		t.Fatalf("max_id %d after refused overflow", got)
	}
	var recorded bool
	f.read(func(st *fsmState) { _, recorded = st.requests["y"] })
	if recorded {
		t.Fatal("a refused request_id was recorded")
	}
}

func TestFSMIdempotency(t *testing.T) {
	f := New(nil)
	applyAt(t, f, 1, createCmd("a", 0, 10))
	applyAt(t, f, 1, createCmd("b", 0, 10))
	first := applyAt(t, f, 2, reserveCmd("a", 0, "r1", 0))
	again := applyAt(t, f, 3, reserveCmd("a", 0, "r1", 0))
	if again.Err != nil || !proto.Equal(first.Seg, again.Seg) {
		t.Fatalf("retry got %v (%v), first %v", again.Seg, again.Err, first.Seg)
	}
	if got := maxID(f, "a"); got != 10 {
		t.Fatalf("max_id %d after a retried request, want 10", got)
	}
	if r := applyAt(t, f, 4, reserveCmd("b", 0, "r1", 0)); !errors.Is(r.Err, errs.InvalidArgument) {
		t.Fatalf("request_id reused for another tag: err %v", r.Err)
	}
	if got := maxID(f, "b"); got != 0 {
		t.Fatalf("tag b moved to %d", got)
	}
}

func TestFSMIdempotencyEvictionIsBoundedFIFO(t *testing.T) {
	f := New(nil)
	applyAt(t, f, 1, createCmd("a", 0, 1))
	const limit = 3
	segs := map[string]*seqsvrv1.RequestRecord{}
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		segs[id] = applyAt(t, f, 2, reserveCmd("a", 0, id, limit)).Seg
	}
	f.read(func(st *fsmState) {
		if len(st.requests) != limit || len(st.order)-st.head != limit {
			t.Fatalf("record holds %d (%d in order), limit %d", len(st.requests), len(st.order)-st.head, limit)
		}
	})
	// r1 and r2 were evicted: a retry now burns a new segment (documented bound).
	if r := applyAt(t, f, 3, reserveCmd("a", 0, "r1", limit)); r.Seg.GetFirst() != 6 {
		t.Fatalf("evicted r1 got %v, want a new segment starting at 6", r.Seg)
	}
	// r3 was evicted by that new r1; r4 and r5 are still remembered.
	for _, id := range []string{"r4", "r5"} {
		if r := applyAt(t, f, 3, reserveCmd("a", 0, id, limit)); !proto.Equal(r.Seg, segs[id]) {
			t.Fatalf("%s: got %v want %v", id, r.Seg, segs[id])
		}
	}
	if r := applyAt(t, f, 3, reserveCmd("a", 0, "r3", limit)); r.Seg.GetFirst() != 7 {
		t.Fatalf("r3 should have been evicted; got %v", r.Seg)
	}
	// Many more entries keep the order slice compact.
	for i := 0; i < 5000; i++ {
		applyAt(t, f, 4, reserveCmd("a", 0, "bulk"+string(rune('a'+i%26))+itoa(i), limit))
	}
	f.read(func(st *fsmState) {
		if len(st.order) > 2*1024+limit+1 {
			t.Fatalf("order slice grew to %d", len(st.order))
		}
	})
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

// Without OnFatal, an entry the machine cannot apply panics (commands_test.go
// has the stop through OnFatal).
func TestFSMPanicsOnBadEntriesWithoutOnFatal(t *testing.T) {
	f := New(nil)
	mustPanic := func(name string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: no panic", name)
			}
		}()
		fn()
	}
	mustPanic("undecodable", func() { f.Apply(&raft.Log{Type: raft.LogCommand, Data: []byte{0xff, 0xff, 0xff}}) })
	empty, _ := proto.Marshal(&seqsvrv1.Command{NowMs: 1})
	mustPanic("unknown command", func() { f.Apply(&raft.Log{Type: raft.LogCommand, Data: empty}) })
}

func TestFSMMembers(t *testing.T) {
	f := New(nil)
	applyAt(t, f, 1, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SetMember{SetMember: &seqsvrv1.SetMemberCommand{Id: "n1", RaftAddr: "r", HttpAddr: "h"}}})
	if m := f.Member("n1"); m.GetHttpAddr() != "h" {
		t.Fatalf("member %v", m)
	}
	applyAt(t, f, 1, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SetMember{SetMember: &seqsvrv1.SetMemberCommand{Id: "n1", RaftAddr: "r", HttpAddr: "h2"}}})
	if m := f.Member("n1"); m.GetHttpAddr() != "h2" {
		t.Fatalf("member not updated: %v", m)
	}
	applyAt(t, f, 1, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RemoveMember{RemoveMember: &seqsvrv1.RemoveMemberCommand{Id: "n1"}}})
	if m := f.Member("n1"); m != nil {
		t.Fatalf("member not removed: %v", m)
	}
}

// Replaying the same log on two FSMs gives byte-identical snapshots.
func TestFSMDeterministic(t *testing.T) {
	log := []*seqsvrv1.Command{
		createCmd("x", 0, 7), createCmd("y", 5, 3), reserveCmd("x", 0, "a", 2), reserveCmd("y", 4, "b", 2),
		reserveCmd("x", 0, "c", 2), registerCmd("n1", "i1", 50, 100, 1000), registerCmd("n2", "i2", 60, 100, 1000),
		renewCmd("n1", 0, "i1", 70, 100),
	}
	snap := func() []byte {
		f := New(nil)
		for i, c := range log {
			applyAt(t, f, int64(100+i), c)
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(f.st.toProto())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := snap(), snap(); string(a) != string(b) {
		t.Fatal("two replays of the same log differ")
	}
}
