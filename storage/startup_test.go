package storage

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// diskless is one member's raft stores kept across restarts of open, as a
// data dir would be.
type diskless struct {
	logs, stable *raft.InmemStore
	snaps        *raft.InmemSnapshotStore
}

func newDiskless() *diskless {
	return &diskless{logs: raft.NewInmemStore(), stable: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
}

func (d *diskless) parts(Config) (raftParts, error) {
	_, trans := raft.NewInmemTransport("")
	return raftParts{trans: trans, logs: d.logs, stable: d.stable, snaps: d.snaps}, nil
}

// syncBuf is a log sink tests can read while raft writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startupConfig(id, raftAddr string, log *syncBuf) Config {
	cfg := testConfig(id, raftAddr, "127.0.0.1:1")
	cfg.DataDir = "mem"
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	return cfg
}

func TestStartWithoutClusterSpecRefuses(t *testing.T) {
	d := newDiskless()
	var log syncBuf
	_, err := open(startupConfig("a", "ra", &log), d.parts)
	if !errors.Is(err, ErrNoCluster) {
		t.Fatalf("open with no state, peers, join or bootstrap: %v, want ErrNoCluster", err)
	}
	if ok, _ := raft.HasExistingState(d.logs, d.stable, d.snaps); ok {
		t.Fatal("a refused start wrote raft state")
	}
}

// bootstrapAlone starts a one-member cluster with Bootstrap on d, waits
// for it to lead and stops it.
func bootstrapAlone(t *testing.T, d *diskless, id, raftAddr string) {
	t.Helper()
	var log syncBuf
	cfg := startupConfig(id, raftAddr, &log)
	cfg.Bootstrap = true
	s, err := open(cfg, d.parts)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "a bootstrapped lone member to lead", func() bool { return s.raft.State() == raft.Leader })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRestartChecksStoredConfiguration(t *testing.T) {
	skipShort(t)
	d := newDiskless()
	bootstrapAlone(t, d, "a", "ra")

	cases := []struct {
		name     string
		id, addr string
		peers    []Peer
		join     string
		wantErr  error
		wantWarn []string // each must appear in the log; none: no WARN at all
	}{
		{name: "same flags", id: "a", addr: "ra"},
		{name: "other node id", id: "b", addr: "ra", wantErr: ErrStateConflict},
		{name: "other raft addr", id: "a", addr: "rz", wantWarn: []string{"--raft-addr differs", "flag_raft_addr=rz", "stored_raft_addr=ra"}},
		{name: "peers as stored", id: "a", addr: "ra", peers: []Peer{{"a", "ra", "h"}}},
		{name: "other peers", id: "a", addr: "ra", peers: []Peer{{"a", "rq", "h"}, {"c", "rc", "h"}},
			wantWarn: []string{"--peers differs", "a has Raft address rq in --peers but ra stored", "c=rc is in --peers but not a member", `stored="a=ra"`}},
		{name: "peers without this member", id: "a", addr: "ra", peers: []Peer{{"c", "rc", "h"}},
			wantWarn: []string{"a=ra is a member but not in --peers", "c=rc is in --peers but not a member"}},
		{name: "join is ignored", id: "a", addr: "ra", join: "somewhere"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log syncBuf
			cfg := startupConfig(c.id, c.addr, &log)
			cfg.Peers, cfg.Join = c.peers, c.join
			s, err := open(cfg, d.parts)
			if s != nil {
				defer s.Close()
			}
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("open: %v, want %v", err, c.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), `"b"`) || !strings.Contains(err.Error(), `"a"`) {
					t.Fatalf("the error does not name the node ID and the directory's owner: %v", err)
				}
				return
			}
			out := log.String()
			if len(c.wantWarn) == 0 && strings.Contains(out, "level=WARN") {
				t.Fatalf("unexpected warning:\n%s", out)
			}
			for _, w := range c.wantWarn {
				if !strings.Contains(out, w) {
					t.Errorf("log lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// The data dir remembers its member: a removed member restarting on its own
// directory is let through (the leader may add it again), another node ID
// is refused.
func TestClaimDataDir(t *testing.T) {
	stable := raft.NewInmemStore()
	a := Config{NodeID: "a", DataDir: "d"}
	if owner, err := dataDirOwner(stable, a); owner != "" || err != nil {
		t.Fatalf("a fresh dir: owner %q, %v", owner, err)
	}
	if err := claimDataDir(stable, a); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if owner, err := dataDirOwner(stable, a); owner != "a" || err != nil {
		t.Fatalf("the owner again: %q, %v", owner, err)
	}
	_, err := dataDirOwner(stable, Config{NodeID: "b", DataDir: "d"})
	if !errors.Is(err, ErrStateConflict) || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("another node ID: %v, want ErrStateConflict naming the owner", err)
	}
}

// A data dir written before the store recorded its owner holds Raft state
// and no owner: another node ID is refused by the stored configuration
// (as before owners were recorded), and must not claim the directory; the
// member's own node ID claims it.
func TestUnclaimedDataDirWithState(t *testing.T) {
	skipShort(t)
	d := newDiskless()
	bootstrapAlone(t, d, "a", "ra")
	unclaim := func() {
		if err := d.stable.Set(nodeIDKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	unclaim()
	var log syncBuf
	if s, err := open(startupConfig("b", "ra", &log), d.parts); !errors.Is(err, ErrStateConflict) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("another node ID on an unclaimed dir with state: %v, want ErrStateConflict", err)
	}
	if owner, _ := d.stable.Get(nodeIDKey); len(owner) != 0 {
		t.Fatalf("a refused start claimed the dir for %q", owner)
	}
	s, err := open(startupConfig("a", "ra", &log), d.parts)
	if err != nil {
		t.Fatalf("the member's own node ID: %v", err)
	}
	s.Close()
	if owner, _ := d.stable.Get(nodeIDKey); string(owner) != "a" {
		t.Fatalf("the dir's owner after its member started: %q, want a", owner)
	}
}
