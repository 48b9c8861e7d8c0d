package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// boltStores is what raft-boltdb's BoltStore is to raft: the log store and
// the stable store in one file.
type boltStores interface {
	raft.LogStore
	raft.StableStore
}

// How the guard retries.
const (
	// diskProbeInterval: how often a member whose data dir refused a write
	// tries a small write to learn that space is back.
	diskProbeInterval = 500 * time.Millisecond
	// diskRetryMax bounds the wait between retries of a stable-store write.
	diskRetryMax = time.Second
	// diskProbeSize is how much the probe writes: a small write fits in
	// bolt's free pages long before raft's next batch of entries does, and
	// would declare the disk healed too early.
	diskProbeSize = 64 << 10
)

// probeKey is the stable-store key the guard writes to learn the disk
// takes writes again.
var probeKey = []byte("seqsvr_disk_probe")

// diskGuard sits between raft (behind its log cache) and the bolt file,
// and tells the member whether its data dir takes writes. Raft already
// never acknowledges an entry its log store failed to write: a leader's
// failed append answers the write with the error and steps down, and a
// follower's is rejected to the leader. What the guard adds:
//
//   - The member refuses writes at once, with ErrDiskFull naming the path,
//     while the last write failed, instead of proposing entries raft can
//     only refuse (or forwarding them while it cannot vote on them).
//   - A full disk (ENOSPC, EDQUOT) heals by itself: a probe write every
//     diskProbeInterval clears the state once it succeeds, so the member
//     serves again with no restart, its state as it was.
//   - Any other write error (EIO, a failed fsync) is sticky: after a failed
//     fsync the kernel may have dropped the pages it could not write, and
//     what this process reads back is no longer what is on disk. Every later
//     write fails with the first error until the member is restarted, so it
//     can never acknowledge anything again on state it cannot trust.
//   - A stable-store write (the current term, the vote) that fails is
//     retried until it succeeds, holding raft's goroutine: raft panics when
//     it cannot record a new term, and the member would stop for good. The
//     member answers nothing through raft meanwhile; the other members
//     carry on without it.
//   - A follower's append that fails is held the same way, never answered
//     as refused. hashicorp/raft (v1.7.3) answers a failed append with a
//     rejection, and the leader's answer to a rejection is to send from
//     one entry earlier; after enough rejections (about 250, some 40
//     minutes of a full disk at raft's backoff) every entry it sends is
//     one the follower already holds, the follower accepts them, and then
//     sets its commit index to the leader's capped by its own last index,
//     not by the last entry it was sent. A follower that still holds
//     entries of a deposed leader past that point would apply them: its
//     state would differ from the others'. Held, the follower answers
//     nothing until its disk takes the entries (the leader's call times
//     out, which moves nothing back, and it logs "failed to contact" the
//     follower: heartbeats too wait on raft's goroutine, see
//     raftconf.Transport). A leader's failed append is returned: raft
//     steps it down, which is what a leader that cannot write must do.
type diskGuard struct {
	bolt boltStores
	path string
	log  *slog.Logger
	stop <-chan struct{}

	// retry turns the stable-store retry on once the member has started:
	// a start that cannot write must fail with the error, not hang.
	retry atomic.Bool
	// follower reports whether raft is a follower; it is read on raft's
	// goroutine, the one that changes raft's state, so it is exact there.
	// It is set once raft runs, before retry is stored, and read only
	// after retry is loaded true (the atomic publishes it).
	follower func() bool
	// stuck is true while a stable-store write or a follower's append is
	// being retried.
	stuck atomic.Bool

	// tail is a truncation of the log's end that raft asked for
	// (DeleteRange up to the last index, before it stores the entries that
	// replace the conflicting ones) and that the guard holds back until
	// those entries are stored: see DeleteRange.
	tailMu sync.Mutex
	tail   *[2]uint64

	mu     sync.Mutex
	failed error // the last write's error; nil once a write succeeded
	fatal  error // a write error that is not a full disk: sticky
	since  time.Time
}

func newDiskGuard(bolt boltStores, path string, log *slog.Logger, stop <-chan struct{}) *diskGuard {
	return &diskGuard{bolt: bolt, path: path, log: log, stop: stop}
}

// check is nil while the data dir takes writes, and otherwise the error a
// write is answered with: ErrDiskFull naming the path and the cause.
func (g *diskGuard) check() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.fatal != nil:
		return fmt.Errorf("%w: I/O error on %s since %s (%v); this member refuses writes until it is restarted",
			ErrDiskIO, g.path, g.since.UTC().Format(time.RFC3339), g.fatal)
	case g.failed != nil:
		return fmt.Errorf("%w: %s since %s (%v); this member refuses writes until a write succeeds",
			ErrDiskFull, g.path, g.since.UTC().Format(time.RFC3339), g.failed)
	}
	return nil
}

// DataDirErr is nil while this member's data dir takes writes, and
// otherwise why it refuses writes (ErrDiskFull or ErrDiskIO, naming the
// path): for /metrics and the status page.
func (s *Store) DataDirErr() error { return s.disk.check() }

// handOffLeadership transfers leadership away from this member, whose
// data dir refuses writes (cause), unless a transfer is already running.
// Raft steps a leader down by itself when its own append fails, but a
// leader that refuses writes before proposing them (propose) would
// otherwise keep leading, and every write forwarded to it would fail,
// while the other members could serve them.
func (s *Store) handOffLeadership(cause error) {
	if !s.handingOff.CompareAndSwap(false, true) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.handingOff.Store(false)
		s.log.Warn("handing leadership to another member: this member's data dir refuses writes", "cause", cause)
		if err := s.await(s.raft.LeadershipTransfer()); err != nil {
			s.log.Warn("leadership transfer failed; this member keeps refusing writes", "err", err)
		}
	}()
}

// spaceError reports whether err is the file system running out of room
// (which more room cures) rather than a failing device. Bolt returns the
// *PathError of the write or fsync; the string is a fallback for layers
// that format the error instead of wrapping it.
func spaceError(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "no space left on device") || strings.Contains(s, "disk quota exceeded")
}

// write runs one write to the bolt file and records how it went.
func (g *diskGuard) write(op string, f func() error) error {
	g.mu.Lock()
	fatal := g.fatal
	g.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	err := f()
	g.record(op, err)
	return err
}

// record notes a write's outcome, logging each change of state once.
func (g *diskGuard) record(op string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil && g.failed != nil && g.fatal == nil:
		g.log.Info("data dir takes writes again; serving writes", "path", g.path, "refused_for", time.Since(g.since).Round(time.Millisecond).String())
		g.failed = nil
	case err == nil || g.fatal != nil:
	case !spaceError(err):
		g.fatal, g.failed, g.since = err, err, time.Now()
		g.log.Error("I/O error writing the data dir: this member refuses writes until it is restarted (check the disk first)", "path", g.path, "op", op, "err", err)
	case g.failed == nil:
		g.failed, g.since = err, time.Now()
		g.log.Error("data dir is full: this member refuses writes until a write succeeds (free space; no restart needed)", "path", g.path, "op", op, "err", err)
	}
}

// failing reports whether the last write failed with a full disk (which
// a probe may find cured).
func (g *diskGuard) failing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed != nil && g.fatal == nil
}

// probeLoop writes probeKey every diskProbeInterval while the disk is
// full, until stop is closed, so the member learns that space came back
// even when nothing else writes.
func (g *diskGuard) probeLoop() {
	t := time.NewTicker(diskProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		if g.failing() {
			_ = g.write("probe", g.probe)
		}
	}
}

// probe writes diskProbeSize bytes and then frees them again for raft's
// use (bolt reuses the pages of the overwritten value).
func (g *diskGuard) probe() error {
	if err := g.bolt.Set(probeKey, make([]byte, diskProbeSize)); err != nil {
		return err
	}
	return g.bolt.Set(probeKey, nil)
}

// stable retries a stable-store write until it succeeds (see diskGuard).
// After stop it keeps waiting: returning the error would make raft panic
// while the process shuts down; Close does not wait for a stuck raft.
func (g *diskGuard) stable(op string, f func() error) error {
	err := g.write(op, f)
	if err == nil || !g.retry.Load() {
		return err
	}
	return g.hold(op, f)
}

// hold retries f until it succeeds, holding the caller (raft's goroutine),
// waiting up to diskRetryMax between tries. A sticky I/O error never
// clears: the member then waits until it is restarted, answering nothing
// through raft. After stop it keeps waiting (see stable).
func (g *diskGuard) hold(op string, f func() error) error {
	g.stuck.Store(true)
	defer g.stuck.Store(false)
	for wait := diskProbeInterval / 5; ; wait = min(2*wait, diskRetryMax) {
		select {
		case <-g.stop:
			select {} // the process is exiting; see above
		case <-time.After(wait):
		}
		if g.write(op, f) == nil {
			return nil
		}
	}
}

// The log store: reads pass through; writes are recorded.

func (g *diskGuard) FirstIndex() (uint64, error)        { return g.bolt.FirstIndex() }
func (g *diskGuard) LastIndex() (uint64, error)         { return g.bolt.LastIndex() }
func (g *diskGuard) GetLog(i uint64, l *raft.Log) error { return g.bolt.GetLog(i, l) }
func (g *diskGuard) Get(k []byte) ([]byte, error)       { return g.bolt.Get(k) }
func (g *diskGuard) GetUint64(k []byte) (uint64, error) { return g.bolt.GetUint64(k) }
func (g *diskGuard) StoreLog(l *raft.Log) error         { return g.StoreLogs([]*raft.Log{l}) }
func (g *diskGuard) StoreLogs(logs []*raft.Log) error {
	g.tailMu.Lock()
	tail := g.tail
	g.tail = nil
	g.tailMu.Unlock()
	// A follower's writes are held, not refused (see diskGuard); a
	// leader's (and any before the member has started) fail.
	held := g.retry.Load() && g.follower != nil && g.follower()
	write := func(op string, f func() error) error {
		err := g.write(op, f)
		if err != nil && held {
			err = g.hold(op, f)
		}
		return err
	}
	if err := write("append log", func() error { return g.bolt.StoreLogs(logs) }); err != nil || tail == nil || len(logs) == 0 {
		// A failed append leaves the held-back truncation undone: the log
		// on disk is still what raft believes it is, and raft truncates
		// again when the leader retries.
		return err
	}
	// The stored entries replaced the conflicting ones at their indexes;
	// what lies beyond them goes now. On a follower this is held too: an
	// error here would leave raft believing in a last index past entries
	// that are no longer the leader's, the case raft's commit rule turns
	// into applying them (see diskGuard).
	if lo := max(tail[0], logs[len(logs)-1].Index+1); lo <= tail[1] {
		return write("truncate log", func() error { return g.bolt.DeleteRange(lo, tail[1]) })
	}
	return nil
}

// DeleteRange passes a compaction (the log's head) to the store, and holds
// back a truncation of the log's tail until the entries that replace it
// are stored (StoreLogs). A follower whose entries conflict with the
// leader's deletes them and then stores the leader's; if that store fails
// (a full disk), hashicorp/raft keeps its idea of the last index from
// before the delete, and the entries it believes it has are gone: the
// leader then appends after a hole and the member stops applying at it
// ("failed to get log entry ... log not found"; raft v1.7.3 notes this in
// appendEntries). Held back, a failed store leaves the old entries in place,
// matching what raft believes.
func (g *diskGuard) DeleteRange(lo, hi uint64) error {
	if first, err := g.bolt.FirstIndex(); err == nil && lo > first {
		if last, err := g.bolt.LastIndex(); err == nil && hi >= last {
			g.tailMu.Lock()
			g.tail = &[2]uint64{lo, hi}
			g.tailMu.Unlock()
			return nil
		}
	}
	return g.write("compact log", func() error { return g.bolt.DeleteRange(lo, hi) })
}

// The stable store: writes are retried until they succeed.

func (g *diskGuard) Set(k, v []byte) error {
	return g.stable("set "+string(k), func() error { return g.bolt.Set(k, v) })
}

func (g *diskGuard) SetUint64(k []byte, v uint64) error {
	return g.stable("set "+string(k), func() error { return g.bolt.SetUint64(k, v) })
}
