package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

type memSink struct {
	bytes.Buffer
	failWrite         bool
	cancelled, closed bool
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failWrite {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

func populated(t *testing.T) *Machine {
	f := New(smallLayout())
	applyAt(t, f, 10, createCmd("a", 0, 10))
	applyAt(t, f, 11, createCmd("b", 100, 5))
	applyAt(t, f, 12, reserveCmd("a", 0, "r1", 3))
	applyAt(t, f, 13, reserveCmd("b", 0, "r2", 3))
	applyAt(t, f, 14, reserveCmd("a", 0, "r3", 3))
	applyAt(t, f, 15, reserveCmd("a", 0, "r4", 3)) // evicts r1
	applyAt(t, f, 16, registerCmd("n1", "i1", 16, ttl, retention))
	// A deleted tag: its tombstone must survive the snapshot.
	mustApply(t, f, 16, createCmd("gone", 40, 5))
	mustApply(t, f, 16, reserveCmd("gone", 0, "", 3))
	mustApply(t, f, 16, deleteCmd("gone"))
	applyAt(t, f, 17, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SetMember{SetMember: &seqsvrv1.SetMemberCommand{Id: "m", RaftAddr: "r", HttpAddr: "h"}}})
	// Per-key sequences: a pending handover, a member that left, raised
	// sections.
	mustApply(t, f, 18, hbCmd("sa", "i", false))
	mustApply(t, f, 18, spaceCmd("sp", 100, 10, 7))
	mustApply(t, f, 18, spaceCmd("sq", 5, 1, 3))
	mustApply(t, f, 19, hbCmd("sb", "j", false))
	mustApply(t, f, 19, hbCmd("sc", "k", true))
	mustApply(t, f, 19, raiseCmd("sa", "i", "sp", 0, -1, 9, 40))
	return f
}

func persist(t *testing.T, f *Machine) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src := populated(t)
	data := persist(t, src)

	// The target has unrelated prior state that Restore must discard.
	dst := New(nil)
	applyAt(t, dst, 1, createCmd("stale", 0, 1))
	applyAt(t, dst, 1, reserveCmd("stale", 0, "old", 0))
	applyAt(t, dst, 1, registerCmd("ghost", "g", 1, ttl, retention))
	applyAt(t, dst, 1, spaceCmd("ghost", 1, 1, 1))
	if err := dst.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(src.st.toProto(), dst.st.toProto()) {
		t.Fatalf("restored state differs:\n%v\n%v", src.st.toProto(), dst.st.toProto())
	}
	if _, v := routing(dst, "ghost"); maxID(dst, "stale") != -1 || v != 0 || dst.Member("m") == nil {
		t.Fatal("prior state survived Restore or members lost")
	}
	if dst.st.layout.GetWorkerBits() != 2 {
		t.Fatalf("layout not restored: %v", dst.st.layout)
	}
	// Both continue identically, including FIFO eviction order and IDs.
	for _, f := range []*Machine{src, dst} {
		applyAt(t, f, 20, reserveCmd("a", 0, "r5", 3)) // evicts r2
		applyAt(t, f, 21, registerCmd("n2", "i2", 21, ttl, retention))
		mustApply(t, f, 22, hbCmd("sa", "i", false, span("sp", 5, 9)))
		mustApply(t, f, 22, raiseCmd("sa", "i", "sp", 0, 7))
	}
	wantRuns(t, dst, "sp", run{0, 4, "sa", ""}, run{5, 9, "sb", ""})
	if maxSeq(dst, "sp", 0) != 14 || maxSeq(dst, "sp", 9) != 47 {
		t.Fatalf("restored maxes: %d %d", maxSeq(dst, "sp", 0), maxSeq(dst, "sp", 9))
	}
	if !proto.Equal(src.st.toProto(), dst.st.toProto()) {
		t.Fatal("states diverge after restore")
	}
	if ts, ok := tombstone(dst, "gone"); !ok || ts != 45 {
		t.Fatalf("tombstone of gone after restore: %d %v, want 45", ts, ok)
	}
	if len(dst.st.toProto().GetTags()) != len(src.st.toProto().GetTags()) || maxID(dst, "gone") != -1 {
		t.Fatal("the tombstone came back as a live tag")
	}
	if r := mustApply(t, dst, 22, createCmd("gone", 0, 5)); r.Tag.GetMaxId() != 45 {
		t.Fatalf("re-created after restore at max_id %d, want 45", r.Tag.GetMaxId())
	}
	if r := applyAt(t, dst, 22, reserveCmd("b", 0, "r2", 3)); r.Seg.GetFirst() != 106 {
		t.Fatalf("r2 should be evicted, got %v", r.Seg)
	}
	if r := applyAt(t, dst, 22, reserveCmd("a", 0, "r4", 3)); r.Seg.GetFirst() != 21 || r.Seg.GetLast() != 30 {
		t.Fatalf("r4 should be remembered, got %v", r.Seg)
	}
}

func TestSnapshotPersistCancelsOnError(t *testing.T) {
	snap, _ := populated(t).Snapshot()
	sink := &memSink{failWrite: true}
	if err := snap.Persist(sink); err == nil {
		t.Fatal("no error from a failing sink")
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("cancelled=%v closed=%v", sink.cancelled, sink.closed)
	}
}

func TestRestoreRejectsGarbage(t *testing.T) {
	f := populated(t)
	before := f.st.toProto()
	if err := f.Restore(io.NopCloser(bytes.NewReader([]byte{0xff, 0xff}))); err == nil {
		t.Fatal("garbage snapshot accepted")
	}
	if !proto.Equal(before, f.st.toProto()) {
		t.Fatal("a failed restore changed the state")
	}
}
