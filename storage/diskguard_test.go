package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// failingBolt is raft's in-memory store whose writes fail with err while
// err is set.
type failingBolt struct {
	*raft.InmemStore
	mu  sync.Mutex
	err error
}

func (f *failingBolt) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *failingBolt) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *failingBolt) StoreLogs(l []*raft.Log) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.InmemStore.StoreLogs(l)
}

func (f *failingBolt) Set(k, v []byte) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.InmemStore.Set(k, v)
}

func (f *failingBolt) SetUint64(k []byte, v uint64) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.InmemStore.SetUint64(k, v)
}

// syncedBuffer is a log sink safe for the guard's goroutines.
type syncedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestGuard(t *testing.T) (*diskGuard, *failingBolt, *syncedBuffer) {
	t.Helper()
	bolt := &failingBolt{InmemStore: raft.NewInmemStore()}
	logs := &syncedBuffer{}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	g := newDiskGuard(bolt, "/data/s1/raft.db", slog.New(slog.NewTextHandler(logs, nil)), stop)
	return g, bolt, logs
}

func enospc() error {
	return &fs.PathError{Op: "write", Path: "/data/s1/raft.db", Err: syscall.ENOSPC}
}

// A full disk: the failed append is recorded, writes are refused as
// unavailable naming the path, the log says so once, and the probe clears
// the state once space is back.
func TestDiskGuardFullHeals(t *testing.T) {
	g, bolt, logs := newTestGuard(t)
	if err := g.check(); err != nil {
		t.Fatalf("fresh guard: %v", err)
	}
	bolt.setErr(enospc())
	for i := 0; i < 3; i++ {
		if err := g.StoreLogs([]*raft.Log{{Index: 1}}); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("append on a full disk: %v", err)
		}
	}
	err := g.check()
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "/data/s1/raft.db") {
		t.Fatalf("check on a full disk = %v, want ErrDiskFull (unavailable) naming the path", err)
	}
	if n := strings.Count(logs.String(), "data dir is full"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs)
	}
	go g.probeLoop()
	time.Sleep(2 * diskProbeInterval) // the probe must not clear while still full
	if g.check() == nil {
		t.Fatal("a failed probe cleared the state")
	}
	bolt.setErr(nil)
	poll.Until(t, 10*time.Second, "the probe to see space back", func() bool { return g.check() == nil })
	if !strings.Contains(logs.String(), "takes writes again") {
		t.Fatalf("recovery not logged:\n%s", logs)
	}
	if err := g.StoreLogs([]*raft.Log{{Index: 1}}); err != nil {
		t.Fatal(err)
	}
}

// An I/O error is sticky: later writes fail with it although the device
// would take them, until a restart (a new guard).
func TestDiskGuardIOErrorSticky(t *testing.T) {
	g, bolt, logs := newTestGuard(t)
	eio := &fs.PathError{Op: "sync", Path: "/data/s1/raft.db", Err: syscall.EIO}
	bolt.setErr(eio)
	if err := g.StoreLogs([]*raft.Log{{Index: 1}}); !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	bolt.setErr(nil)
	if err := g.StoreLogs([]*raft.Log{{Index: 1}}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append after an I/O error = %v, want the first error again", err)
	}
	if g.failing() {
		t.Fatal("an I/O error counted as a full disk (the probe would clear it)")
	}
	err := g.check()
	if !errors.Is(err, ErrDiskIO) || !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "restarted") {
		t.Fatalf("check = %v, want ErrDiskIO asking for a restart", err)
	}
	if !strings.Contains(logs.String(), "I/O error") {
		t.Fatalf("not logged:\n%s", logs)
	}
}

// A stable-store write (raft's term) that fails is retried until it
// succeeds instead of being returned, once retry is on: raft panics when it
// cannot record a term.
func TestDiskGuardStableWriteWaits(t *testing.T) {
	g, bolt, _ := newTestGuard(t)
	bolt.setErr(enospc())
	if err := g.SetUint64([]byte("CurrentTerm"), 2); err == nil {
		t.Fatal("before start, a failed stable write must return its error")
	}
	g.retry.Store(true)
	done := make(chan error, 1)
	go func() { done <- g.SetUint64([]byte("CurrentTerm"), 3) }()
	poll.Until(t, 10*time.Second, "the write to wait", g.stuck.Load)
	select {
	case err := <-done:
		t.Fatalf("returned on a full disk: %v", err)
	case <-time.After(3 * diskRetryMax):
	}
	bolt.setErr(nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after space came back")
	}
	if v, err := bolt.GetUint64([]byte("CurrentTerm")); err != nil || v != 3 {
		t.Fatalf("term = %d, %v", v, err)
	}
	if g.stuck.Load() || g.check() != nil {
		t.Fatalf("stuck=%v check=%v after the write", g.stuck.Load(), g.check())
	}
}

func TestSpaceError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{enospc(), true},
		{fmt.Errorf("wrapped: %w", syscall.EDQUOT), true},
		{fmt.Errorf("unable to store logs within log store, err: %q", enospc().Error()), true},
		{&fs.PathError{Op: "sync", Path: "x", Err: syscall.EIO}, false},
		{errors.New("database not open"), false},
	} {
		if got := spaceError(c.err); got != c.want {
			t.Errorf("spaceError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// startGuarded is testNode.start with the guard over a failing in-memory
// store as the log and stable store, as Open has it over bolt.
func (n *testNode) startGuarded(t *testing.T, cfg Config) *diskGuard {
	t.Helper()
	return <-n.startGuardedAsync(t, cfg)
}

// startGuardedAsync starts the member in the background (members without
// state wait for each other before they bootstrap); the channel gets its
// guard once it is open.
func (n *testNode) startGuardedAsync(t *testing.T, cfg Config) <-chan *diskGuard {
	out := make(chan *diskGuard, 1)
	var g *diskGuard
	go func() {
		err := n.startErr(cfg, func(n *testNode) raftParts {
			g = newDiskGuard(&failingBolt{InmemStore: raft.NewInmemStore()}, "/data/"+n.id+"/raft.db", cfg.Logger, nil)
			return raftParts{trans: n.trans, logs: g, stable: g, snaps: raft.NewInmemSnapshotStore(), disk: g}
		})
		if err != nil {
			t.Error(err)
		}
		out <- g
	}()
	t.Cleanup(func() { n.stop() })
	return out
}

// A leader whose data dir refuses writes without raft noticing (a failed
// log compaction, which raft only logs) hands leadership over, so the
// writes the others forward to the leader succeed again; it refuses
// writes itself, naming its path.
func TestDiskFullLeaderHandsOver(t *testing.T) {
	skipShort(t)
	c := &testCluster{t: t}
	for i := 0; i < 3; i++ {
		node := newTestNode(t)
		node.id = "n" + strconv.Itoa(i+1)
		c.nodes = append(c.nodes, node)
	}
	connectAll(c.nodes)
	var peers []Peer
	for _, node := range c.nodes {
		peers = append(peers, Peer{ID: node.id, RaftAddr: string(node.addr), HTTPAddr: node.httpAddr()})
	}
	guards := map[*testNode]*diskGuard{}
	started := map[*testNode]<-chan *diskGuard{}
	for _, node := range c.nodes {
		cfg := testConfig(node.id, "", "")
		cfg.Peers = peers
		started[node] = node.startGuardedAsync(t, cfg)
	}
	for node, g := range started {
		guards[node] = <-g
	}
	if t.Failed() {
		t.FailNow()
	}
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.client().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "h", Step: 10})); err != nil {
		t.Fatal(err)
	}
	guards[leader].bolt.(*failingBolt).setErr(enospc()) // the probe fails too
	guards[leader].record("compact log", enospc())

	_, err := leader.client().ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "h"}))
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "/data/"+leader.id+"/raft.db") {
		t.Fatalf("write on the full leader: %v, want unavailable naming its raft.db", err)
	}
	other := c.followers(leader)[0]
	poll.Until(t, 15*time.Second, "a write through another member to succeed", func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := other.client().ReserveSegment(c, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "h"}))
		return err == nil
	})
	if leader.store.raft.State() == raft.Leader {
		t.Fatal("the member with the full disk still leads")
	}
}

// startOneGuarded starts a one-member cluster on the guard over a failing
// in-memory store and waits for it to lead.
func startOneGuarded(t *testing.T) (*testNode, *failingBolt) {
	t.Helper()
	skipShort(t)
	n := newTestNode(t)
	n.id = "g1"
	cfg := testConfig(n.id, "", "")
	cfg.Peers = []Peer{{ID: n.id, RaftAddr: string(n.addr), HTTPAddr: n.httpAddr()}}
	g := n.startGuarded(t, cfg)
	poll.Until(t, 15*time.Second, "the member to lead", func() bool {
		return n.store.raft.State() == raft.Leader && n.store.Ready(context.Background()) == nil
	})
	return n, g.bolt.(*failingBolt)
}

// With raft itself: a lone leader whose append fails steps down and, at
// the election that follows, cannot write its new term. Raft would panic
// there; the member waits instead, and once the store takes writes again
// it leads and serves, its state intact.
func TestDiskFullTermWriteWaits(t *testing.T) {
	n, bolt := startOneGuarded(t)
	ctx := context.Background()
	if _, err := n.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "w", Step: 10}); err != nil {
		t.Fatal(err)
	}
	bolt.setErr(enospc())
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := n.store.reserveSegment(c, &seqsvrv1.ReserveSegmentRequest{Tag: "w"})
	cancel()
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("reserve on a failing store: %v, want unavailable", err)
	}
	poll.Until(t, 15*time.Second, "raft to wait on its term write", n.store.disk.stuck.Load)
	bolt.setErr(nil)
	poll.Until(t, 15*time.Second, "a write to succeed once the store takes writes", func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := n.store.reserveSegment(c, &seqsvrv1.ReserveSegmentRequest{Tag: "w"})
		return err == nil
	})
	tag, err := n.store.getTag(ctx, &seqsvrv1.GetTagRequest{Tag: "w"})
	if err != nil || tag.GetMaxId() != 10 {
		t.Fatalf("after recovery: %v %v, want max_id 10 (the refused reservation never counted)", tag, err)
	}
}

// Close returns while raft waits on a term write that cannot succeed.
func TestDiskFullCloseWhileStuck(t *testing.T) {
	n, bolt := startOneGuarded(t)
	bolt.setErr(enospc())
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, _ = n.store.createTag(c, &seqsvrv1.CreateTagRequest{Tag: "x"})
	cancel()
	poll.Until(t, 15*time.Second, "raft to wait on its term write", n.store.disk.stuck.Load)
	done := make(chan error, 1)
	go func() { done <- n.store.Close() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Close of a stuck member reported no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs while raft waits on the disk")
	}
}

// A follower's truncation of conflicting entries is held back until the
// leader's entries are stored: when the store fails (a full disk), the
// old entries stay, as raft believes (a hole here stopped a member in the
// jepsen disk scenario); when it succeeds, the stored entries replace the
// conflicting ones and what lies beyond them is deleted. A compaction of
// the head goes through at once.
func TestDiskGuardTailTruncationWaitsForTheAppend(t *testing.T) {
	g, bolt, _ := newTestGuard(t)
	has := func(i, term uint64) bool {
		var l raft.Log
		return bolt.GetLog(i, &l) == nil && l.Term == term
	}
	if err := g.StoreLogs(logEntries(1, 6, 1)); err != nil {
		t.Fatal(err)
	}
	// Conflict from 4 on; the append of the leader's entries fails.
	if err := g.DeleteRange(4, 6); err != nil {
		t.Fatal(err)
	}
	bolt.setErr(enospc())
	if err := g.StoreLogs(logEntries(4, 4, 2)); err == nil {
		t.Fatal("append on a full disk succeeded")
	}
	for i := uint64(1); i <= 6; i++ {
		if !has(i, 1) {
			t.Fatalf("entry %d gone after a failed append: the log has a hole raft does not know of", i)
		}
	}
	// The leader retries once space is back.
	bolt.setErr(nil)
	if err := g.DeleteRange(4, 6); err != nil {
		t.Fatal(err)
	}
	if err := g.StoreLogs(logEntries(4, 4, 2)); err != nil {
		t.Fatal(err)
	}
	if last, _ := bolt.LastIndex(); last != 4 || !has(4, 2) || !has(3, 1) || has(5, 1) || has(6, 1) {
		t.Fatalf("after the retried append: last %d, want 1..3 of term 1 and 4 of term 2 only", last)
	}
	// A compaction of the head is not held back.
	if err := g.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	if first, _ := bolt.FirstIndex(); first != 3 {
		t.Fatalf("first index %d after compacting 1..2, want 3", first)
	}
}

// A follower's failed append is held until the disk takes it, never
// answered as refused: a refusal moves the leader's next entry back by
// one, and enough of them make raft (v1.7.3) commit entries of a deposed
// leader on this member (see diskGuard). The truncation held back with it
// is done once the entries are stored. A leader's failed append is
// returned at once: raft steps it down.
func TestDiskGuardFollowerAppendWaits(t *testing.T) {
	g, bolt, logs := newTestGuard(t)
	role := "follower"
	var roleMu sync.Mutex
	g.follower = func() bool { roleMu.Lock(); defer roleMu.Unlock(); return role == "follower" }
	g.retry.Store(true)
	if err := g.StoreLogs(logEntries(1, 6, 1)); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteRange(4, 6); err != nil { // entries 4..6 conflict with the leader's
		t.Fatal(err)
	}
	bolt.setErr(enospc())
	done := make(chan error, 1)
	go func() { done <- g.StoreLogs(logEntries(4, 4, 2)) }()
	poll.Until(t, 10*time.Second, "the follower's append to be held", g.stuck.Load)
	select {
	case err := <-done:
		t.Fatalf("a follower's append on a full disk returned (%v) instead of waiting", err)
	case <-time.After(300 * time.Millisecond): // a few retries
	}
	if g.check() == nil {
		t.Fatal("a member holding a failed append does not refuse writes")
	}
	bolt.setErr(nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("held append: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held append did not finish once the disk took writes")
	}
	var l raft.Log
	if last, _ := bolt.LastIndex(); last != 4 || bolt.GetLog(4, &l) != nil || l.Term != 2 {
		t.Fatalf("after the held append: last %d, entry 4 %+v; want the leader's entry 4 last", last, l)
	}
	if g.check() != nil || !strings.Contains(logs.String(), "takes writes again") {
		t.Fatalf("the guard still refuses after the held append went through: %v", g.check())
	}

	roleMu.Lock()
	role = "leader"
	roleMu.Unlock()
	bolt.setErr(enospc())
	go func() { done <- g.StoreLogs(logEntries(5, 5, 2)) }()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("a leader's append on a full disk: %v, want ENOSPC", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a leader's append on a full disk was held")
	}
}

// logEntries are raft log entries lo..hi of term, with no data.
func logEntries(lo, hi, term uint64) []*raft.Log {
	var ls []*raft.Log
	for i := lo; i <= hi; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: term})
	}
	return ls
}
