package raftconf

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestNewDefaultsAndOverrides(t *testing.T) {
	rc, err := New("a", Timing{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if rc.LocalID != "a" || rc.HeartbeatTimeout != DefaultHeartbeatTimeout || rc.ElectionTimeout != DefaultElectionTimeout ||
		rc.LeaderLeaseTimeout != DefaultLeaderLeaseTimeout || rc.CommitTimeout != DefaultCommitTimeout ||
		rc.SnapshotThreshold != DefaultSnapshotThreshold || rc.SnapshotInterval != DefaultSnapshotInterval ||
		rc.MaxAppendEntries != MaxAppendEntries || !rc.BatchApplyCh {
		t.Fatalf("defaults: %+v", rc)
	}
	set := Timing{HeartbeatTimeout: time.Second, ElectionTimeout: 2 * time.Second, LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout: 5 * time.Millisecond, SnapshotThreshold: 10, SnapshotInterval: time.Minute}
	rc, err = New("b", set, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	got := Timing{rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout, rc.CommitTimeout, rc.SnapshotThreshold, rc.SnapshotInterval}
	if got != set || rc.MaxAppendEntries != MaxAppendEntries {
		t.Fatalf("set %+v, got %+v", set, got)
	}
	// The default lease follows a heartbeat timeout shorter than it.
	rc, err = New("d", Timing{HeartbeatTimeout: 50 * time.Millisecond}, hclog.NewNullLogger())
	if err != nil || rc.LeaderLeaseTimeout != 50*time.Millisecond {
		t.Fatalf("heartbeat 50ms alone: lease %v, %v", rc.LeaderLeaseTimeout, err)
	}
	// Raft's own rule: the lease must not exceed the heartbeat timeout.
	if _, err := New("c", Timing{HeartbeatTimeout: 100 * time.Millisecond, LeaderLeaseTimeout: time.Second}, hclog.NewNullLogger()); err == nil {
		t.Fatal("an invalid timing was accepted")
	}
}

func TestOpenStores(t *testing.T) {
	st, err := OpenStores(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Bolt.Close()
	if err := st.Bolt.SetUint64([]byte("k"), 7); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Bolt.GetUint64([]byte("k")); err != nil || v != 7 {
		t.Fatalf("stable store: %d %v", v, err)
	}
	if _, err := OpenStores(filepath.Join(t.TempDir(), "missing", "raft.db")); err == nil {
		t.Fatal("opened a path in a missing directory")
	}
}

func TestOpenStoresInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	st, err := OpenStores(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Bolt.Close()
	// bolt's lock is a flock on the open file, so a second open in this
	// process is refused like one from another process.
	_, err = OpenStores(path)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second open: %v, want ErrInUse naming %s", err, path)
	}
}
