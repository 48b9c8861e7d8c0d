package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/seqsvr/seqsvr/cmd/internal/serve"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/storage"
)

// run is the whole process: parse, open the store, serve until a signal,
// shut the HTTP server down, then close the store. It returns the exit code.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		if isHelp(err) {
			return 0
		}
		fmt.Fprintf(stderr, "storesvr: %v\n(run storesvr --help for the flags)\n", err)
		return 2
	}
	logger, err := cfg.Log.NewLogger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "storesvr: %v\n", err)
		return 2
	}
	slog.SetDefault(logger)
	if err := serveStore(cfg, logger); err != nil {
		logger.Error("storesvr failed", "err", err)
		return 1
	}
	return 0
}

func serveStore(cfg *config, logger *slog.Logger) error {
	reg := serve.NewRegistry()
	if err := serve.InstallRaftMetrics(reg); err != nil {
		return err
	}
	if !serve.RaftMetricsWired {
		logger.Warn("built without -tags hashicorpmetrics: raft_* metrics will be missing from /metrics (use make build)")
	}
	peers, err := storage.ParsePeers(cfg.Peers)
	if err != nil {
		return fmt.Errorf("--peers: %w", err)
	}
	// Bind before opening the store so a busy port fails fast and other
	// members can reach us as soon as Raft starts.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srvHandler := &deferredHandler{}
	srv, err := serve.Listen(cfg.HTTPAddr, srvHandler, logger)
	if err != nil {
		return err
	}
	if err := srv.RegisterMetrics(reg); err != nil {
		return err
	}
	srv.Start()
	st, err := storage.Open(storage.Config{
		NodeID:             cfg.NodeID,
		RaftAddr:           cfg.RaftAddr,
		HTTPAddr:           cfg.HTTPAddr,
		DataDir:            cfg.DataDir,
		Peers:              peers,
		Join:               cfg.Join,
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
	})
	if err != nil {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		_ = srv.Wait(cancelled, 0)
		return fmt.Errorf("open store: %w", err)
	}
	path, h := seqsvrv1connect.NewStoreServiceHandler(st.Service(), serve.ConnectOptions(cfg.MaxBodyBytes, logger)...)
	srv.SetFast(st.FastRoutes(cfg.MaxBodyBytes, logger))
	srvHandler.set(serve.NewHandler(serve.Options{
		Logger:       logger,
		Services:     []serve.Service{{Name: seqsvrv1connect.StoreServiceName, Path: path, Handler: h}},
		Ready:        st.Ready,
		Gatherer:     reg,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Pprof:        cfg.Debug.Pprof,
	}))
	logger.Info("storesvr serving", "node_id", cfg.NodeID, "http_addr", srv.Addr(), "raft_addr", cfg.RaftAddr, "data_dir", cfg.DataDir)
	serveErr := srv.Wait(ctx, cfg.ShutdownGrace)
	if err := st.Close(); err != nil {
		logger.Warn("closing store", "err", err)
	}
	logger.Info("storesvr stopped")
	return serveErr
}
