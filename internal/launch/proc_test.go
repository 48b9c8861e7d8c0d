package launch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	c, err := New(Options{BinDir: "/bin", Dir: dir, Stores: 3, Allocs: 2, StoreArgs: []string{"--x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Stores) != 3 || len(c.Allocs) != 2 {
		t.Fatalf("got %d stores %d allocs", len(c.Stores), len(c.Allocs))
	}
	peers := PeersFlag(c.Stores)
	parts := strings.Split(peers, ",")
	if len(parts) != 3 {
		t.Fatalf("peers %q", peers)
	}
	for i, s := range c.Stores {
		want := s.NodeID + "=" + s.RaftAddr + "@" + s.HTTPAddr
		if parts[i] != want {
			t.Fatalf("peer %d = %q, want %q", i, parts[i], want)
		}
		args := s.Args()
		if !slices.Contains(args, peers) || !slices.Contains(args, "--raft-addr") || args[len(args)-1] != "--x" {
			t.Fatalf("store args %v", args)
		}
		if s.DataDir != filepath.Join(dir, "data", s.Name) {
			t.Fatalf("data dir %s", s.DataDir)
		}
	}
	s := c.Stores[0]
	s.Join = c.Stores[1].HTTPAddr
	if args := s.Args(); slices.Contains(args, "--peers") || !slices.Contains(args, "--join") {
		t.Fatalf("join args %v", args)
	}
	a := c.Allocs[1].Args()
	i := slices.Index(a, "--store")
	if i < 0 || a[i+1] != strings.Join(c.StoreURLs(), ",") {
		t.Fatalf("alloc args %v", a)
	}
	if _, err := New(Options{BinDir: "/bin", Dir: dir}); err == nil {
		t.Fatal("zero stores accepted")
	}
}

func TestFixedPorts(t *testing.T) {
	c, err := New(Options{BinDir: "b", Dir: t.TempDir(), Stores: 2, Allocs: 1, StoreHTTPBase: 8080, StoreRaftBase: 7000, AllocHTTPBase: 9000})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stores[1].HTTPAddr != "127.0.0.1:8082" || c.Stores[1].RaftAddr != "127.0.0.1:7002" || c.Allocs[0].HTTPAddr != "127.0.0.1:9000" {
		t.Fatalf("addrs %s %s %s", c.Stores[1].HTTPAddr, c.Stores[1].RaftAddr, c.Allocs[0].HTTPAddr)
	}
}

// TestProcLifecycle drives a real child (a shell script standing in for a
// server binary) through start, pause, resume, kill and restart.
func TestProcLifecycle(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "storesvr")
	script := "#!/bin/sh\ntrap 'echo term; exit 0' TERM\necho \"args: $*\"\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{BinDir: dir, Dir: dir, Stores: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p := c.Stores[0]
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.Running() || p.Pid() == 0 {
		t.Fatal("not running after Start")
	}
	logged := func(n int) func() bool {
		return func() bool {
			b, _ := os.ReadFile(p.LogPath)
			return strings.Count(string(b), "args: --node-id s1") == n
		}
	}
	poll.Until(t, 10*time.Second, "start line 1 in the log", logged(1))
	if err := p.Pause(); err != nil || !p.Paused() {
		t.Fatalf("pause: %v", err)
	}
	if err := p.Resume(); err != nil || p.Paused() {
		t.Fatalf("resume: %v", err)
	}
	pid := p.Pid()
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Pid() == pid || p.Starts() != 2 {
		t.Fatalf("restart kept pid %d or starts=%d", pid, p.Starts())
	}
	poll.Until(t, 10*time.Second, "start line 2 in the log", logged(2))
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("running after Stop")
	}
	if b, _ := os.ReadFile(p.LogPath); !strings.Contains(string(b), "term\n") {
		t.Fatalf("no clean SIGTERM exit in log:\n%s", b)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("kill of stopped proc: %v", err)
	}
	if err := p.Pause(); err != ErrNotRunning {
		t.Fatalf("pause of stopped proc: %v", err)
	}
	c.Close()
	c.Close()
}

// A secure store presents the join token with --peers as with --join: its
// own calls to the other members (the version poll) need it too.
func TestJoinTokenFileWithPeers(t *testing.T) {
	for _, p := range []*Proc{
		{Kind: KindStore, Peers: "s1=a@b", JoinTokenFile: "tok"},
		{Kind: KindStore, Join: "http://x", JoinTokenFile: "tok"},
	} {
		args := p.Args()
		if i := slices.Index(args, "--join-token-file"); i < 0 || args[i+1] != "tok" {
			t.Fatalf("args %v lack --join-token-file tok", args)
		}
	}
	if args := (&Proc{Kind: KindStore, Peers: "s1=a@b"}).Args(); slices.Contains(args, "--join-token-file") {
		t.Fatalf("plain store args %v carry a join token", args)
	}
}
