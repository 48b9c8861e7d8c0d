package storage

import (
	"time"

	"github.com/hashicorp/raft"
)

// Raft tuning that is not a per-deployment setting. The bench's raw raft
// reference applies the same values (TuneRaftConfig, RaftTransportPool), so
// the store is measured against raft configured exactly like its own.
const (
	// RaftMaxAppendEntries bounds both one leader disk batch (group commit
	// of queued applies) and one AppendEntries RPC. 256 lets a burst from
	// every allocsvr and client land in one fsync.
	RaftMaxAppendEntries = 256
	// RaftTransportPool is the TCP transport's connection pool per peer.
	RaftTransportPool = 5
	// RaftTransportTimeout bounds one transport I/O.
	RaftTransportTimeout = 10 * time.Second
)

// TuneRaftConfig applies the store's defaults to rc: the LAN timeouts, the
// batching and the snapshot cadence. Open applies it, then any values set
// in Config on top.
//
// BatchApplyCh buffers raft's apply channel to RaftMaxAppendEntries: a
// proposal is queued without a goroutine handoff while the leader loop
// sits in its fsync, and the next batch takes all of them at once. Raft
// documents that it weakens Apply's enqueue timeout; propose already treats
// every outcome after enqueue as "may have committed" and answers only once
// the entry is committed and applied, so nothing the store promises
// changes.
func TuneRaftConfig(rc *raft.Config) {
	rc.HeartbeatTimeout = DefaultHeartbeatTimeout
	rc.ElectionTimeout = DefaultElectionTimeout
	rc.LeaderLeaseTimeout = DefaultLeaderLeaseTimeout
	rc.CommitTimeout = DefaultCommitTimeout
	rc.SnapshotThreshold = DefaultSnapshotThreshold
	rc.SnapshotInterval = DefaultSnapshotInterval
	rc.MaxAppendEntries = RaftMaxAppendEntries
	rc.BatchApplyCh = true
}
