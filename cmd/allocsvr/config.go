package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/seqsvr/seqsvr/alloc/segment"
	"github.com/seqsvr/seqsvr/alloc/seq"
	"github.com/seqsvr/seqsvr/alloc/snowflake"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/serve"
)

// config is everything allocsvr reads from flags and SEQSVR_* variables.
// The tuning flags' defaults are the packages' DefaultConfig values; a zero
// (or negative) value given explicitly also takes that default.
type config struct {
	NodeID, HTTPAddr, DataDir string
	Stores                    []string
	storesRaw                 string

	MaxStep          int64
	PrefetchRatio    float64
	EmptyWait        time.Duration
	LoadTimeout      time.Duration
	NegativeCacheTTL time.Duration

	Snowflake               bool
	SnowflakeMaxClockOffset time.Duration
	SnowflakeRenewInterval  time.Duration
	SnowflakeFenceMargin    time.Duration
	SnowflakeMaxBackward    time.Duration

	Seq                  bool
	SeqHeartbeatInterval time.Duration
	SeqFenceMargin       time.Duration
	AdvertiseURL         string

	StoreRequestTimeout time.Duration
	StoreTokenFile      string
	StoreCA             string
	// StoreCert and StoreKey: the client certificate presented to the
	// store and other allocsvrs (default --tls-cert).
	StoreCert, StoreKey string

	serve.Common
}

const summary = `allocsvr hands out unique IDs over Connect, gRPC, gRPC-web and Meituan Leaf's HTTP API.
  allocsvr --http-addr 127.0.0.1:8080 --data-dir run/a1 \
    --store http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083
Any number of allocsvrs may share one store cluster.`

func parseConfig(args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{}
	fs := serve.NewFlagSet("allocsvr", summary, out)
	fs.StringVar(&c.NodeID, "node-id", "", "stable identity for the snowflake worker registration (default: hostname + http port)")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "Connect/gRPC/gRPC-web API, Leaf HTTP API, /healthz, /readyz, /metrics")
	fs.StringVar(&c.storesRaw, "store", "", "HTTP base URLs of any storesvr members, comma-separated (required)")
	fs.StringVar(&c.DataDir, "data-dir", "", "local state: the snowflake worker ID and its last timestamp, the per-key instance, the store cluster followed (required with --snowflake)")
	// Every tuning default comes from its package's DefaultConfig, so
	// --help shows the values in force and no number is written twice.
	seg, sf, sq, sc := segment.DefaultConfig(), snowflake.DefaultConfig(), seq.DefaultConfig(), storeclient.DefaultOptions()
	fs.Int64Var(&c.MaxStep, "max-step", seg.MaxStep, "cap of the dynamic segment size")
	fs.Float64Var(&c.PrefetchRatio, "prefetch-ratio", seg.PrefetchRatio, "used fraction of a segment at which the next is reserved")
	fs.DurationVar(&c.EmptyWait, "empty-wait", seg.EmptyWait, "how long a request waits for an in-flight load when both buffers are empty")
	fs.DurationVar(&c.LoadTimeout, "load-timeout", seg.LoadTimeout, "bound of one segment reservation including retries")
	fs.DurationVar(&c.NegativeCacheTTL, "negative-cache-ttl", seg.NegativeCacheTTL, "how long an unknown tag is remembered as unknown")
	fs.BoolVar(&c.Snowflake, "snowflake", true, "serve snowflake IDs (registers a worker ID in the store)")
	fs.DurationVar(&c.SnowflakeMaxClockOffset, "snowflake-max-clock-offset", sf.MaxClockOffset, "refuse to start when the local clock differs from the store leader's by more")
	fs.DurationVar(&c.SnowflakeRenewInterval, "snowflake-renew-interval", sf.RenewInterval, "worker lease renewal period")
	fs.DurationVar(&c.SnowflakeFenceMargin, "snowflake-fence-margin", sf.FenceMargin, "stop serving snowflake IDs this long before an unrenewed lease expires")
	fs.DurationVar(&c.SnowflakeMaxBackward, "snowflake-max-backward-wait", sf.MaxBackwardWait, "clock steps back up to this are waited out; larger ones answer unavailable")
	fs.BoolVar(&c.Seq, "seq", true, "serve per-key sequences (SeqService; heartbeats a lease in the store)")
	fs.DurationVar(&c.SeqHeartbeatInterval, "seq-heartbeat-interval", sq.HeartbeatInterval, "per-key sequence lease renewal period")
	fs.DurationVar(&c.SeqFenceMargin, "seq-fence-margin", sq.FenceMargin, "stop serving per-key sections this long before an unrenewed lease (measured from the heartbeat's send) ends")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", "", "base URL other allocsvrs forward per-key calls to (default: http:// + the actual listen address)")
	fs.DurationVar(&c.StoreRequestTimeout, "store-request-timeout", sc.RequestTimeout, "bound of one attempt against one store member")
	fs.StringVar(&c.StoreTokenFile, "store-token-file", "", "file holding the bearer token (role alloc) presented to the store and to other allocsvrs;\nre-read when it changes")
	fs.StringVar(&c.StoreCA, "store-ca", "", "PEM CA to trust for https:// store URLs (and other allocsvrs' HTTPS)")
	fs.StringVar(&c.StoreCert, "store-cert", "", "PEM client certificate presented to the store and other allocsvrs (default: --tls-cert);\ngive it no member's name: a member refuses it on its Raft port (docs/security.md)")
	fs.StringVar(&c.StoreKey, "store-key", "", "PEM key of --store-cert")
	c.Common.Register(fs)
	if err := serve.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	var errs []error
	c.Stores = serve.SplitList(c.storesRaw)
	if len(c.Stores) == 0 {
		errs = append(errs, errors.New("--store is required (HTTP base URLs of storesvr members)"))
	}
	if c.Snowflake && c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required (or --snowflake=false)"))
	}
	if c.NodeID == "" {
		id, err := defaultNodeID(c.HTTPAddr)
		if err != nil {
			errs = append(errs, err)
		}
		c.NodeID = id
	}
	errs = append(errs, c.Common.Check()...)
	if c.Seq && (c.SeqHeartbeatInterval <= 0 || c.SeqFenceMargin < 0) {
		errs = append(errs, fmt.Errorf("--seq-heartbeat-interval must be > 0 and --seq-fence-margin >= 0, got %v and %v", c.SeqHeartbeatInterval, c.SeqFenceMargin))
	}
	if (c.StoreCert == "") != (c.StoreKey == "") {
		errs = append(errs, errors.New("--store-cert and --store-key go together"))
	}
	if c.PrefetchRatio < 0 || c.PrefetchRatio >= 1 {
		errs = append(errs, fmt.Errorf("--prefetch-ratio must be in [0,1), got %v", c.PrefetchRatio))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// defaultNodeID is hostname:port, stable across restarts of one
// deployment and distinct for two allocsvrs on one host.
func defaultNodeID(httpAddr string) (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("--node-id not given and hostname unknown: %w", err)
	}
	_, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "", fmt.Errorf("--http-addr %q: %w", httpAddr, err)
	}
	return host + ":" + port, nil
}
