package fsm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// testdata/base-0.1.0/snapshot-2-55.bin is a snapshot written by the base
// release (jepsen/upgrade-base, 0.1.0 at 955cac4): a one-member storesvr
// with --snapshot-threshold 8, tags orders (100 reserved), users (start
// 1000, 1030 reserved) and late (step raised to 16), gone (15 reserved,
// then deleted), space chat (1000 keys, sections of 100, step 50; keys 7
// and 250 used), snowflake worker a1 (ID 0) and allocsvr a1 gone (leaving).
// snapshot-2-55.meta.json is raft's meta.json beside it.
const baseSnapshot = "testdata/base-0.1.0/snapshot-2-55.bin"

func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenBaseSnapshot: the current code restores the base release's
// snapshot (no format version: format 1, no cluster version: level 1),
// sees every part of it, and carries on from it as the base release
// would have.
func TestGoldenBaseSnapshot(t *testing.T) {
	b := readGolden(t, baseSnapshot)
	if v, err := SnapshotFormatOf(b); err != nil || v != 1 {
		t.Fatalf("format of the base snapshot: %d, %v; want 1", v, err)
	}
	f := New(nil)
	if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]int64{"orders": 100, "users": 1030, "late": 0} {
		if got := maxID(f, tag); got != want {
			t.Errorf("tag %s max_id %d, want %d", tag, got, want)
		}
	}
	if tg := f.Tag("late"); tg.GetStep() != 16 {
		t.Errorf("late's step %d, want 16", tg.GetStep())
	}
	if ts, ok := tombstone(f, "gone"); !ok || ts != 15 || maxID(f, "gone") != -1 {
		t.Errorf("gone: tombstone %d %v, live max_id %d", ts, ok, maxID(f, "gone"))
	}
	if maxSeq(f, "chat", 0) != 50 || maxSeq(f, "chat", 2) != 50 || maxSeq(f, "chat", 1) != 0 {
		t.Errorf("chat max_seq by section: %d %d %d", maxSeq(f, "chat", 0), maxSeq(f, "chat", 1), maxSeq(f, "chat", 2))
	}
	st := f.State()
	if len(st.GetWorkers()) != 1 || st.GetWorkers()[0].GetNodeId() != "a1" || st.GetNextWorkerId() != 1 {
		t.Errorf("workers %v, next %d", st.GetWorkers(), st.GetNextWorkerId())
	}
	if len(st.GetSeqMembers()) != 1 || !st.GetSeqMembers()[0].GetLeaving() || len(st.GetRequests()) != 5 {
		t.Errorf("seq members %v, %d request records", st.GetSeqMembers(), len(st.GetRequests()))
	}
	if f.Member("s1").GetHttpAddr() != "127.0.0.1:27412" || f.ClusterVersion() != BaseLevel {
		t.Errorf("member s1 %v, cluster version %d", f.Member("s1"), f.ClusterVersion())
	}
	// It carries on: the next segment above what the base release
	// reserved, a retried request_id answered as the base release did, the
	// deleted tag re-created above its tombstone.
	if r := mustApply(t, f, 1795671910000, reserveCmd("users", 0, "", 0)); r.Seg.GetFirst() != 1031 {
		t.Errorf("next users segment %v, want from 1031", r.Seg)
	}
	if r := mustApply(t, f, 1795671910000, reserveCmd("users", 0, "4a582a80ccb087f8cec59b666d4c0482", 0)); r.Seg.GetFirst() != 1011 || r.Seg.GetLast() != 1030 {
		t.Errorf("retried request answered %v, want 1011..1030", r.Seg)
	}
	if r := mustApply(t, f, 1795671910000, createCmd("gone", 0, 5)); r.Tag.GetMaxId() != 15 {
		t.Errorf("gone re-created at %d, want 15", r.Tag.GetMaxId())
	}
}

// withFormat is b with format_version set to v, as a newer release would
// write it (appended: the last value of a field wins).
func withFormat(b []byte, v uint64) []byte {
	out := append([]byte(nil), b...)
	out = protowire.AppendTag(out, snapshotFormatField, protowire.VarintType)
	return protowire.AppendVarint(out, v)
}

// TestGoldenNewerSnapshotRefused: the base snapshot stamped with a newer
// format version is refused, naming both versions, and changes nothing;
// stamped with the current one it is read.
func TestGoldenNewerSnapshotRefused(t *testing.T) {
	b := readGolden(t, baseSnapshot)
	f := populated(t)
	before := persist(t, f)
	err := f.Restore(io.NopCloser(bytes.NewReader(withFormat(b, SnapshotFormat+1))))
	if !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("newer snapshot: %v, want ErrNewerFormat", err)
	}
	for _, want := range []string{"format version 2", "reads up to 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !bytes.Equal(before, persist(t, f)) {
		t.Fatal("a refused snapshot changed the state")
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(withFormat(b, SnapshotFormat)))); err != nil {
		t.Fatalf("current format: %v", err)
	}
	if maxID(f, "users") != 1030 {
		t.Fatal("the current-format snapshot was misread")
	}
}
