package seq

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
)

// Store is the part of the store a Node needs (*storeclient.Client in
// production, an in-memory fake in unit tests).
type Store interface {
	SeqHeartbeat(ctx context.Context, req *seqsvrv1.SeqHeartbeatRequest) (*seqsvrv1.SeqHeartbeatResponse, error)
	RaiseSections(ctx context.Context, req *seqsvrv1.RaiseSectionsRequest) (*seqsvrv1.RaiseSectionsResponse, error)
}

// ForwardedHeader marks a call one allocsvr forwarded to a section's
// owner; the owner serves it or refuses, it never forwards it again.
const ForwardedHeader = "Seqsvr-Forwarded"

// Config tunes a Node. Zero values take DefaultConfig's.
type Config struct {
	// InstanceID names this process's lease at the store (default: a new
	// random one). LoadInstance keeps it across restarts on one data dir.
	InstanceID string
	// NodeID names this allocsvr in the routing table (required).
	NodeID string
	// URL is the base URL other allocsvrs forward calls to (required).
	URL string
	// HeartbeatInterval is the lease renewal period (default 500ms).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout bounds one heartbeat, store-client retries included
	// (default 2s).
	HeartbeatTimeout time.Duration
	// FenceMargin: stop serving this long before the lease, measured from
	// the heartbeat's send time, ends (default 1s; half the TTL when the
	// TTL is not longer).
	FenceMargin time.Duration
	// RaiseTimeout bounds one RaiseSections in the background (default 5s).
	RaiseTimeout time.Duration
	// LeaveTimeout bounds the leaving heartbeat of Close (default 2s).
	LeaveTimeout time.Duration
	// HTTPClient carries forwarded calls (default: a pooled client).
	HTTPClient    *http.Client
	ClientOptions []connect.ClientOption
	// Clock defaults to clock.System(); the lease is measured on it.
	Clock      clock.Clock
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// PeerIdleConnsPerHost is how many kept-alive connections a Node's
// HTTPClient keeps to each peer allocsvr it forwards calls to.
const PeerIdleConnsPerHost = 32

// DefaultConfig is the configuration where the caller sets nothing but
// the required NodeID and URL: every default of a Node, defined here only
// (the allocsvr's flags show these values). A zero field of the Config
// given to New takes its value from here; HTTPClient is built anew per
// call (a pooled client of its own).
func DefaultConfig() Config {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = PeerIdleConnsPerHost
	return Config{
		HeartbeatInterval: 500 * time.Millisecond,
		HeartbeatTimeout:  2 * time.Second,
		FenceMargin:       time.Second,
		RaiseTimeout:      5 * time.Second,
		LeaveTimeout:      2 * time.Second,
		HTTPClient:        &http.Client{Transport: tr},
		Clock:             clock.System(),
		Logger:            slog.Default(),
	}
}

// withDefaults returns c with every unset field given its DefaultConfig
// value.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.HeartbeatInterval, d.HeartbeatInterval)
	orDefault(&c.HeartbeatTimeout, d.HeartbeatTimeout)
	orDefault(&c.FenceMargin, d.FenceMargin)
	orDefault(&c.RaiseTimeout, d.RaiseTimeout)
	orDefault(&c.LeaveTimeout, d.LeaveTimeout)
	if c.HTTPClient == nil {
		c.HTTPClient = d.HTTPClient
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}

// orDefault sets *v to d when *v is not positive (unset).
func orDefault(v *time.Duration, d time.Duration) {
	if *v <= 0 {
		*v = d
	}
}
