package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/storage"
	"github.com/seqsvr/seqsvr/web"
)

// Process serves cfg: serve.Main runs it.
func (cfg *config) Process() serve.Process {
	return serve.Process{Addr: cfg.HTTPAddr, Common: cfg.Common, Open: cfg.open}
}

// open opens the store; Close closes it. serve.Run binds the port first,
// so a busy port fails fast and other members reach this one as soon as
// Raft starts (answered 503 until the store is open).
func (cfg *config) open(ctx context.Context, env serve.Env) (*serve.App, error) {
	logger := env.Logger
	if err := serve.InstallRaftMetrics(env.Registry); err != nil {
		return nil, err
	}
	if !serve.RaftMetricsWired {
		logger.Warn("built without -tags hashicorpmetrics: raft_* metrics will be missing from /metrics (use make build)")
	}
	peers, err := storage.ParsePeers(cfg.Peers)
	if err != nil {
		return nil, fmt.Errorf("--peers: %w", err)
	}
	raftTLS, raftPeers, err := cfg.raftTLS(env, peers)
	if err != nil {
		return nil, err
	}
	client, err := cfg.memberClient(env)
	if err != nil {
		return nil, err
	}
	scfg := storage.Config{
		NodeID:             cfg.NodeID,
		RaftAddr:           cfg.RaftAddr,
		HTTPAddr:           cfg.HTTPAddr,
		DataDir:            cfg.DataDir,
		Peers:              peers,
		Join:               cfg.Join,
		Fatal:              env.Fatal,
		Bootstrap:          cfg.Bootstrap,
		MaxSegmentSize:     cfg.MaxSegmentSize,
		Logger:             logger.With("component", "storage"),
		HeartbeatTimeout:   cfg.HeartbeatTimeout,
		ElectionTimeout:    cfg.ElectionTimeout,
		LeaderLeaseTimeout: cfg.LeaderLeaseTimeout,
		CommitTimeout:      cfg.CommitTimeout,
		SnapshotThreshold:  cfg.SnapshotThreshold,
		SnapshotInterval:   cfg.SnapshotInterval,
		RequestRecordLimit: cfg.RequestRecordLimit,
		WorkerLeaseTTL:     cfg.WorkerLeaseTTL,
		WorkerRetention:    cfg.WorkerRetention,
		ClusterVersionHold: cfg.ClusterVersionHold,
		SeqLeaseTTL:        cfg.SeqLeaseTTL,
		RaftTLS:            raftTLS,
		HTTPClient:         client,
		HTTPScheme:         env.Scheme,
		ServeWhileWaiting:  env.ServeWhileStarting,
	}
	metrics := newStoreMetrics(&scfg)
	if err := cfg.rewrite(ctx, scfg, logger.With("component", "restore")); err != nil {
		return nil, err
	}
	st, err := storage.OpenContext(env.Stop, scfg)
	if errors.Is(err, storage.ErrNoCluster) {
		return nil, fmt.Errorf("%s holds no cluster state and neither --peers nor --join is set: pass --peers (every initial member, to start a new cluster), --join HTTPADDR (to add this member to a running cluster) or --bootstrap (to start a one-member cluster)", cfg.DataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if raftPeers != nil {
		raftPeers.Set(st.RaftPeerNames)
	}
	if err := env.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seqsvr_store_data_dir_writable",
		Help: "0 while this member refuses writes because its data dir refused one (full disk, I/O error), else 1.",
	}, func() float64 {
		if st.DataDirErr() != nil {
			return 0
		}
		return 1
	})); err != nil {
		st.Close()
		return nil, err
	}
	if err := metrics.register(env, st); err != nil {
		st.Close()
		return nil, err
	}
	return &serve.App{
		Routes: st.Routes(),
		Handler: serve.Options{
			Ready: st.Ready,
			Page:  web.StorePage,
		},
		Attrs: []any{"node_id", cfg.NodeID, "raft_addr", cfg.RaftAddr, "data_dir", cfg.DataDir, "raft_tls", raftTLS != nil},
		Close: func() {
			if err := st.Close(); err != nil {
				logger.Warn("closing store", "err", err)
			}
		},
		Handover: cfg.handover(st),
	}, nil
}
