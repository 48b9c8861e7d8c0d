// Package raftconf is how seqsvr configures hashicorp/raft, defined once:
// the store (package storage) and the bench's raw raft reference both build
// their raft.Config, TCP transport, log store and snapshot store here, so
// the reference is measured with exactly the store's raft and nothing the
// store does not do.
package raftconf

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// LAN defaults. A follower notices a dead leader after 1-2 heartbeat
// timeouts and an election takes 1-2 election timeouts, so failover is
// well under a second on loopback.
const (
	DefaultHeartbeatTimeout = 200 * time.Millisecond
	DefaultElectionTimeout  = 200 * time.Millisecond
	// A leader that has not heard from a quorum this long steps down. It
	// bounds only how long a cut-off leader keeps answering "I lead" to
	// local checks (reads still verify leadership with a quorum round), so
	// it is as long as raft allows (the heartbeat timeout): at 100 ms a
	// loaded 2-core machine made healthy leaders step down.
	DefaultLeaderLeaseTimeout = 200 * time.Millisecond
	DefaultCommitTimeout      = 20 * time.Millisecond
	DefaultSnapshotThreshold  = 8192
	DefaultSnapshotInterval   = 30 * time.Second
)

// Tuning that is not a per-deployment setting.
const (
	// MaxAppendEntries bounds both one leader disk batch (group commit of
	// queued applies) and one AppendEntries RPC. 256 lets a burst from
	// every allocsvr and client land in one fsync.
	MaxAppendEntries = 256
	// TransportPool is the TCP transport's connection pool per peer.
	TransportPool = 5
	// TransportTimeout bounds one transport I/O.
	TransportTimeout = 10 * time.Second
	// LogCacheSize is how many recent entries are served from memory
	// instead of bolt (followers catching up, replication retries).
	LogCacheSize = 1024
	// SnapshotRetain is how many file snapshots are kept.
	SnapshotRetain = 2
)

// Timing is the per-deployment part of the configuration. A zero field
// takes its DefaultTiming value.
type Timing struct {
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout, CommitTimeout time.Duration
	SnapshotThreshold                                                    uint64
	SnapshotInterval                                                     time.Duration
}

// DefaultTiming is the timing where the caller sets nothing: the defaults
// above, gathered once (storesvr's flags show these values). Its
// LeaderLeaseTimeout is 0, which New reads as "the heartbeat timeout, at
// most DefaultLeaderLeaseTimeout": raft refuses a lease longer than the
// heartbeat timeout, so a fixed default would break a shorter
// --heartbeat-timeout.
func DefaultTiming() Timing {
	return Timing{
		HeartbeatTimeout:  DefaultHeartbeatTimeout,
		ElectionTimeout:   DefaultElectionTimeout,
		CommitTimeout:     DefaultCommitTimeout,
		SnapshotThreshold: DefaultSnapshotThreshold,
		SnapshotInterval:  DefaultSnapshotInterval,
	}
}

// New is the one raft.Config of seqsvr: raft's defaults, t (each zero
// field at its default), and the batching below, validated.
//
// BatchApplyCh buffers raft's apply channel to MaxAppendEntries: a
// proposal is queued without a goroutine handoff while the leader loop
// sits in its fsync, and the next batch takes all of them at once. Raft
// documents that it weakens Apply's enqueue timeout; the store treats
// every outcome after enqueue as "may have committed" and answers only
// once the entry is committed and applied, so nothing it promises changes.
func New(id raft.ServerID, t Timing, logger hclog.Logger) (*raft.Config, error) {
	rc := raft.DefaultConfig()
	rc.LocalID = id
	rc.Logger = logger
	d := DefaultTiming()
	rc.HeartbeatTimeout = orDefault(t.HeartbeatTimeout, d.HeartbeatTimeout)
	rc.ElectionTimeout = orDefault(t.ElectionTimeout, d.ElectionTimeout)
	// Raft refuses a lease longer than the heartbeat timeout: the default
	// follows a shorter --heartbeat-timeout down.
	rc.LeaderLeaseTimeout = orDefault(t.LeaderLeaseTimeout, min(DefaultLeaderLeaseTimeout, rc.HeartbeatTimeout))
	rc.CommitTimeout = orDefault(t.CommitTimeout, d.CommitTimeout)
	rc.SnapshotThreshold = orDefault(t.SnapshotThreshold, d.SnapshotThreshold)
	rc.SnapshotInterval = orDefault(t.SnapshotInterval, d.SnapshotInterval)
	rc.MaxAppendEntries = MaxAppendEntries
	rc.BatchApplyCh = true
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raft config: %w", err)
	}
	return rc, nil
}

// orDefault is v, or def when v is not positive (unset).
func orDefault[T time.Duration | uint64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// NewTransport is the TCP transport on bind, advertising advertise (nil:
// the bound address), with the pool and timeout above, not pipelining
// (transportConfig), every RPC on raft's own goroutine (Transport).
func NewTransport(bind string, advertise net.Addr, logger hclog.Logger) (*Transport, error) {
	t, err := raft.NewTCPTransportWithConfig(bind, advertise, transportConfig(nil, logger))
	if err != nil {
		return nil, err
	}
	return &Transport{t}, nil
}

// Transport is raft's network transport without its heartbeat fast path.
//
// hashicorp/raft (v1.7.3) answers heartbeats on the transport's
// connection goroutine, beside its main goroutine, so that a follower busy
// with its disk still answers them. A heartbeat of a newer term moves the
// member's current term there too; a deposed leader whose main goroutine
// is appending client entries at that moment stamps them with the new
// term, as if the new leader had sent them. Raft then takes them for the
// new leader's entries at the same index and keeps them: the members'
// logs differ under the same term, and so do their states (reservations
// lost or answered twice). hashicorp/raft#695 describes it (open); make
// jepsen's disk scenario found it (a leader SIGSTOPped with entries
// queued, resumed as a new leader's heartbeat arrived; docs/
// fault-injection.md). Without a heartbeat handler, the transport hands
// heartbeats to raft's main goroutine like every other RPC, where the term
// change is ordered with the appends. The cost: a heartbeat waits behind
// the append being written, a disk write (milliseconds) against a
// heartbeat timeout of hundreds of milliseconds.
type Transport struct{ *raft.NetworkTransport }

// SetHeartbeatHandler ignores the handler raft sets: see Transport.
func (*Transport) SetHeartbeatHandler(func(raft.RPC)) {}

// transportConfig is the one network transport configuration of both
// transports (TCP and TLS); stream nil is the TCP one's own.
//
// MaxRPCsInFlight 1 turns raft's pipelined replication off. hashicorp/raft
// v1.7.3's pipeline stops reading a follower's answers at the first
// failed one (a follower whose disk refused the entries answers so) while
// the leader may still send on it; the send then waits for ever for a
// reader that is gone (hashicorp/raft#612). The heartbeats go on, on their
// own goroutine, so the follower never starts an election: it just never
// gets another entry, and with two such followers the cluster takes no
// write at all. make jepsen's disk scenario found it (docs/fault-injection.md);
// TestFollowerCatchesUpAfterRejectedAppends reproduces it within seconds
// with pipelining on. Raft's own notes measure pipelining as no gain with
// batched appends (MaxAppendEntries), which the store uses.
func transportConfig(stream raft.StreamLayer, logger hclog.Logger) *raft.NetworkTransportConfig {
	return &raft.NetworkTransportConfig{
		Stream:          stream,
		MaxPool:         TransportPool,
		Timeout:         TransportTimeout,
		Logger:          logger,
		MaxRPCsInFlight: 1,
	}
}

// Stores are the log and stable store in one raft-boltdb/v2 file, the log
// behind a cache of LogCacheSize entries.
type Stores struct {
	Bolt *raftboltdb.BoltStore // the stable store; Close it after raft shuts down
	Logs raft.LogStore
}

// LockTimeout bounds the wait for bolt's file lock: a data dir held by a
// live process must end the start with a clear error, not block for ever.
const LockTimeout = time.Second

// ErrInUse means the bolt file is locked by another process (or another
// open in this one).
var ErrInUse = errors.New("in use by another process")

// OpenStores opens path with bolt's defaults: every commit is fsynced, so
// an entry is on disk before it is acknowledged.
func OpenStores(path string) (Stores, error) {
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{Timeout: LockTimeout}})
	if errors.Is(err, bbolt.ErrTimeout) {
		return Stores{}, fmt.Errorf("%s is %w (its lock was not released within %v)", path, ErrInUse, LockTimeout)
	}
	if err != nil {
		return Stores{}, err
	}
	logs, err := raft.NewLogCache(LogCacheSize, bolt)
	if err != nil {
		bolt.Close()
		return Stores{}, err
	}
	return Stores{Bolt: bolt, Logs: logs}, nil
}

// NewSnapshots is the file snapshot store in dir, keeping SnapshotRetain.
func NewSnapshots(dir string, logger hclog.Logger) (*raft.FileSnapshotStore, error) {
	return raft.NewFileSnapshotStoreWithLogger(dir, SnapshotRetain, logger)
}
