package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// writeSnapshot puts a raft snapshot holding state into dataDir's
// snapshot store, as a storesvr would, and returns its ID.
func writeSnapshot(t *testing.T, dataDir string, state []byte) string {
	t.Helper()
	snaps, err := raftconf.NewSnapshots(dataDir, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("")
	conf := raft.Configuration{Servers: []raft.Server{{ID: "s1", Address: "127.0.0.1:1"}}}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 55, 2, conf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(state); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

// TestOpenRefusesNewerSnapshot: a data dir whose newest snapshot is of a
// newer format (a rollback after the newer release wrote it) is refused
// before raft starts, naming the snapshot, its path and both versions;
// raft would otherwise fall back to an older snapshot. The base release's
// snapshot (no format version) opens.
func TestOpenRefusesNewerSnapshot(t *testing.T) {
	base, err := os.ReadFile("fsm/testdata/base-0.1.0/snapshot-2-55.bin")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeSnapshot(t, dir, base)
	if err := checkNewestSnapshot(mustSnaps(t, dir), dir); err != nil {
		t.Fatalf("base release's snapshot: %v", err)
	}
	newer := protowire.AppendVarint(protowire.AppendTag(append([]byte(nil), base...), 15, protowire.VarintType), fsm.SnapshotFormat+1)
	id := writeSnapshot(t, dir, newer)

	cfg := testConfig("s1", "127.0.0.1:0", "127.0.0.1:1")
	cfg.DataDir = dir
	s, err := Open(cfg)
	if err == nil {
		s.Close()
		t.Fatal("a data dir with a newer-format snapshot was opened")
	}
	if !errors.Is(err, fsm.ErrNewerFormat) {
		t.Fatalf("err %v, want fsm.ErrNewerFormat", err)
	}
	for _, want := range []string{id, filepath.Join(dir, "snapshots", id), "format version 2", "reads up to 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func mustSnaps(t *testing.T, dir string) raft.SnapshotStore {
	t.Helper()
	s, err := raftconf.NewSnapshots(dir, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
