package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Config configures one store member. Zero values take DefaultConfig's;
// Open applies them once, so a Config holds only what its caller set.
type Config struct {
	NodeID, RaftAddr, HTTPAddr, DataDir string
	// Peers is the bootstrap list, the same on every initial member. When
	// DataDir already holds Raft state the stored configuration is used and
	// a Peers list that differs from it is logged as a warning.
	Peers []Peer
	// Join is the HTTP address of any member to join through (AddMember),
	// instead of Peers. Ignored when DataDir already holds Raft state.
	Join string
	// Fatal, when set, is called (once) when this member can never run:
	// a join refused because a live member holds NodeID. The binary exits.
	Fatal func(error)
	// ServeWhileWaiting, when set, is called once by a member without Raft
	// state before it asks its peers what to do, with the routes it answers
	// meanwhile (MemberProbe) and the readiness check that says why it
	// waits: the binary serves them until Open returns.
	ServeWhileWaiting func(t routes.Table, ready func(context.Context) error)
	// Bootstrap lets a member with no state and neither Peers nor Join
	// bootstrap a one-member cluster; without it such a start is
	// ErrNoCluster.
	Bootstrap bool
	Logger    *slog.Logger

	// Raft timing; zero values take package raftconf's LAN defaults
	// (raftconf.DefaultTiming, applied by raftconf.New).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout, CommitTimeout time.Duration
	SnapshotThreshold                                                    uint64
	SnapshotInterval                                                     time.Duration

	// RequestRecordLimit bounds the ReserveSegment request_id record
	// (default DefaultRequestRecordLimit).
	RequestRecordLimit int
	// WorkerLeaseTTL is the snowflake worker lease length (default
	// spec.DefaultWorkerLeaseTTL).
	WorkerLeaseTTL time.Duration
	// WorkerRetention: an expired worker ID may be reclaimed by a new node
	// once its lease expired this long ago (default
	// spec.DefaultWorkerRetention).
	WorkerRetention time.Duration
	// SeqLeaseTTL is the allocsvrs' per-key sequence lease length (default
	// spec.DefaultSeqLeaseTTL): a dead allocsvr's sections move this long
	// after its last heartbeat.
	SeqLeaseTTL time.Duration
	// MaxSegmentSize is the largest ReserveSegment size and CreateTag or
	// UpdateTag step; above it the request is errs.InvalidArgument
	// (default DefaultMaxSegmentSize). A tag stored with a larger step
	// before the limit was lowered keeps reserving its step.
	MaxSegmentSize int64
	// Clock is read for the time put into every command and into
	// ClusterStatus (default clock.System()).
	Clock clock.Clock
	// ClusterVersionHold, when not 0, is the level above which the cluster
	// version is not raised while this member is in the cluster (and the
	// leader sees it): an upgrade's rollback stays possible until the
	// operator lifts it. Every member reports its own in ClusterStatus.
	ClusterVersionHold uint32
	// OnBackup, when set, is called with the time each time this member
	// answers a whole Backup stream (taken here as the leader, or relayed).
	OnBackup func(answered time.Time)
	// HTTPClient is used for forwarding and joining; default speaks h2c.
	HTTPClient *http.Client
	// HTTPScheme is how members' HTTP addresses are called: "http" (the
	// default) or "https" when members serve TLS (HTTPClient must then
	// trust their CA).
	HTTPScheme string
	// RaftTLS, when set, runs Raft between members over TLS with it
	// (mutual: build it with tlsconf.Mutual); nil is plain TCP.
	RaftTLS *tls.Config
	// DiscoverBackoff spaces the rounds of probes of a member starting
	// without Raft state (default 100 ms doubling to 2 s, jittered).
	DiscoverBackoff errs.Backoff
}

// defaultApplyTimeout bounds a proposal whose context has no deadline.
const defaultApplyTimeout = 10 * time.Second

// DefaultConfig is the configuration where the caller sets nothing but the
// required addresses and IDs: every default of a store member, gathered
// here (storesvr's flags show these values). A zero field of the Config
// given to Open takes its value from here. HTTPClient nil means
// DefaultHTTPClient(); the raft timing is raftconf.DefaultTiming.
func DefaultConfig() Config {
	t := raftconf.DefaultTiming()
	return Config{
		Logger:             slog.Default(),
		HeartbeatTimeout:   t.HeartbeatTimeout,
		ElectionTimeout:    t.ElectionTimeout,
		LeaderLeaseTimeout: t.LeaderLeaseTimeout,
		CommitTimeout:      t.CommitTimeout,
		SnapshotThreshold:  t.SnapshotThreshold,
		SnapshotInterval:   t.SnapshotInterval,
		RequestRecordLimit: DefaultRequestRecordLimit,
		WorkerLeaseTTL:     spec.DefaultWorkerLeaseTTL,
		WorkerRetention:    spec.DefaultWorkerRetention,
		SeqLeaseTTL:        spec.DefaultSeqLeaseTTL,
		MaxSegmentSize:     DefaultMaxSegmentSize,
		Clock:              clock.System(),
		HTTPScheme:         "http",
		DiscoverBackoff:    errs.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second},
	}
}

// withDefaults checks c and gives every unset field its DefaultConfig
// value. Raft timing is left to raftconf.New, which defaults it where it
// builds the raft.Config.
func (c Config) withDefaults() (Config, error) {
	if c.NodeID == "" {
		return c, errors.New("storage: NodeID is required")
	}
	if c.RaftAddr == "" || c.HTTPAddr == "" {
		return c, errors.New("storage: RaftAddr and HTTPAddr are required")
	}
	if c.Join != "" && len(c.Peers) > 0 {
		return c, errors.New("storage: set Peers (bootstrap) or Join, not both")
	}
	if c.Bootstrap && (c.Join != "" || len(c.Peers) > 0) {
		return c, errors.New("storage: Bootstrap starts a one-member cluster: set it without Peers and Join")
	}
	d := DefaultConfig()
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	c.Logger = c.Logger.With("node_id", c.NodeID)
	orDefault(&c.WorkerLeaseTTL, d.WorkerLeaseTTL)
	orDefault(&c.WorkerRetention, d.WorkerRetention)
	orDefault(&c.SeqLeaseTTL, d.SeqLeaseTTL)
	if c.RequestRecordLimit <= 0 {
		c.RequestRecordLimit = d.RequestRecordLimit
	}
	if c.MaxSegmentSize <= 0 {
		c.MaxSegmentSize = d.MaxSegmentSize
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.DiscoverBackoff.Min <= 0 {
		c.DiscoverBackoff = d.DiscoverBackoff
	}
	if c.HTTPClient == nil {
		c.HTTPClient = DefaultHTTPClient()
	}
	switch c.HTTPScheme {
	case "":
		c.HTTPScheme = d.HTTPScheme
	case "http", "https":
	default:
		return c, errors.New(`storage: HTTPScheme must be "http" or "https"`)
	}
	return c, nil
}

func (c Config) raftTiming() raftconf.Timing {
	return raftconf.Timing{
		HeartbeatTimeout: c.HeartbeatTimeout, ElectionTimeout: c.ElectionTimeout,
		LeaderLeaseTimeout: c.LeaderLeaseTimeout, CommitTimeout: c.CommitTimeout,
		SnapshotThreshold: c.SnapshotThreshold, SnapshotInterval: c.SnapshotInterval,
	}
}

// orDefault sets *d to def when *d is not positive (unset).
func orDefault(d *time.Duration, def time.Duration) {
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
