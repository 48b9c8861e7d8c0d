package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// Config configures one store member. Zero values take the defaults below.
type Config struct {
	NodeID, RaftAddr, HTTPAddr, DataDir string
	// Peers is the bootstrap list, the same on every initial member. It is
	// ignored when DataDir already holds Raft state. With neither Peers nor
	// Join, a member with no state bootstraps a one-member cluster.
	Peers []Peer
	// Join is the HTTP address of any member to join through (AddMember),
	// instead of Peers. Ignored when DataDir already holds Raft state.
	Join   string
	Logger *slog.Logger

	// Raft timing; defaults suit a LAN (see DefaultHeartbeatTimeout...).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout, CommitTimeout time.Duration
	SnapshotThreshold                                                    uint64
	SnapshotInterval                                                     time.Duration

	// RequestRecordLimit bounds the ReserveSegment request_id record.
	RequestRecordLimit int
	// WorkerLeaseTTL is the snowflake worker lease length (default 10s).
	WorkerLeaseTTL time.Duration
	// WorkerRetention: an expired worker ID may be reclaimed by a new node
	// once its lease expired this long ago (default 24h).
	WorkerRetention time.Duration
	// Now is the clock put into every command (default faults.Now).
	Now func() time.Time
	// HTTPClient is used for forwarding and joining; default speaks h2c.
	HTTPClient *http.Client

	// layout overrides the snowflake layout of a fresh FSM (tests only).
	layout    *seqsvrv1.SnowflakeLayout
	defaulted bool
}

// LAN defaults. A follower notices a dead leader after 1-2 heartbeat
// timeouts and an election takes 1-2 election timeouts, so failover is
// well under a second on loopback.
const (
	DefaultHeartbeatTimeout   = 200 * time.Millisecond
	DefaultElectionTimeout    = 200 * time.Millisecond
	DefaultLeaderLeaseTimeout = 100 * time.Millisecond
	DefaultCommitTimeout      = 20 * time.Millisecond
	DefaultSnapshotThreshold  = 8192
	DefaultSnapshotInterval   = 30 * time.Second
	defaultApplyTimeout       = 10 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.defaulted {
		return c, nil
	}
	if c.NodeID == "" {
		return c, errors.New("storage: NodeID is required")
	}
	if c.RaftAddr == "" || c.HTTPAddr == "" {
		return c, errors.New("storage: RaftAddr and HTTPAddr are required")
	}
	if c.Join != "" && len(c.Peers) > 0 {
		return c, errors.New("storage: set Peers (bootstrap) or Join, not both")
	}
	if len(c.Peers) > 0 {
		found := false
		for _, p := range c.Peers {
			if p.ID == c.NodeID {
				found = true
				if p.RaftAddr != c.RaftAddr {
					return c, fmt.Errorf("storage: peers list %s at Raft address %s, but this member's Raft address is %s", p.ID, p.RaftAddr, c.RaftAddr)
				}
			}
		}
		if !found {
			return c, fmt.Errorf("storage: this member's ID %q is not in the peers list", c.NodeID)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = c.Logger.With("node_id", c.NodeID)
	setDur(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	setDur(&c.ElectionTimeout, DefaultElectionTimeout)
	setDur(&c.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	setDur(&c.CommitTimeout, DefaultCommitTimeout)
	setDur(&c.SnapshotInterval, DefaultSnapshotInterval)
	setDur(&c.WorkerLeaseTTL, DefaultWorkerLeaseTTL)
	setDur(&c.WorkerRetention, DefaultWorkerRetention)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.RequestRecordLimit <= 0 {
		c.RequestRecordLimit = DefaultRequestRecordLimit
	}
	if c.Now == nil {
		c.Now = faults.Now
	}
	if c.HTTPClient == nil {
		c.HTTPClient = DefaultHTTPClient()
	}
	c.defaulted = true
	return c, nil
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// DefaultHTTPClient speaks HTTP/2 without TLS (h2c, prior knowledge), which
// every storesvr serves: forwarded calls share a few multiplexed connections.
func DefaultHTTPClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{
		Protocols:   p,
		DialContext: (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}}
}
