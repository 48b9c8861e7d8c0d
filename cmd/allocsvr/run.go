package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/cmd/internal/serve"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// run is the whole process: parse, serve until a signal (or a fatal
// snowflake clock check), shut the HTTP server down, then close the
// allocators. It returns the exit code.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		if isHelp(err) {
			return 0
		}
		fmt.Fprintf(stderr, "allocsvr: %v\n(run allocsvr --help for the flags)\n", err)
		return 2
	}
	logger, err := cfg.Log.NewLogger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "allocsvr: %v\n", err)
		return 2
	}
	slog.SetDefault(logger)
	if err := serveAlloc(cfg, logger); err != nil {
		logger.Error("allocsvr failed", "err", err)
		return 1
	}
	return 0
}

func serveAlloc(cfg *config, logger *slog.Logger) error {
	reg := serve.NewRegistry()
	store, err := alloc.NewStoreClient(cfg.Stores, alloc.StoreClientOptions{
		Logger:         logger.With("component", "storeclient"),
		RequestTimeout: cfg.StoreRequestTimeout,
	})
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	seg := alloc.NewSegmentAllocator(store, alloc.SegmentConfig{
		MaxStep:          cfg.MaxStep,
		PrefetchRatio:    cfg.PrefetchRatio,
		EmptyWait:        cfg.EmptyWait,
		LoadTimeout:      cfg.LoadTimeout,
		NegativeCacheTTL: cfg.NegativeCacheTTL,
		Logger:           logger.With("component", "segment"),
		Registerer:       reg,
	})
	defer seg.Close()
	svc := alloc.NewService(cfg.NodeID, seg)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// fatal ends the process with an error (the snowflake clock check).
	fatalCtx, fatal := context.WithCancelCause(ctx)
	defer fatal(nil)

	var reached atomic.Bool
	go waitForStore(fatalCtx, store, &reached, logger)
	ready := func(context.Context) error {
		if !reached.Load() {
			return errors.New("store not reached yet")
		}
		return nil
	}

	path, h := seqsvrv1connect.NewAllocServiceHandler(svc, serve.ConnectOptions(cfg.MaxBodyBytes, logger)...)
	handler := serve.NewHandler(serve.Options{
		Logger:       logger,
		Services:     []serve.Service{{Name: seqsvrv1connect.AllocServiceName, Path: path, Handler: h}},
		Routes:       svc.LeafRoutes(),
		Ready:        ready,
		Gatherer:     reg,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Pprof:        cfg.Debug.Pprof,
	})
	srv, err := serve.Listen(cfg.HTTPAddr, handler, logger)
	if err != nil {
		return err
	}
	srv.SetFast(svc.FastRoutes(cfg.MaxBodyBytes, logger))
	if err := srv.RegisterMetrics(reg); err != nil {
		return err
	}

	sfDone := make(chan func(), 1)
	if cfg.Snowflake {
		go func() { sfDone <- runSnowflake(fatalCtx, fatal, cfg, store, svc, reg, logger) }()
	} else {
		svc.SetSnowflakeReason("snowflake disabled (--snowflake=false)")
		sfDone <- func() {}
	}

	logger.Info("allocsvr serving", "node_id", cfg.NodeID, "http_addr", srv.Addr(), "stores", cfg.Stores, "snowflake", cfg.Snowflake)
	serveErr := srv.Run(fatalCtx, cfg.ShutdownGrace)
	closeSnowflake := <-sfDone
	closeSnowflake()
	if cause := context.Cause(fatalCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	logger.Info("allocsvr stopped")
	return serveErr
}

// waitForStore marks the allocsvr ready once any store member answered
// with a leader. Ready stays true afterwards: buffers keep serving through
// store outages, which is the point of the double buffer.
func waitForStore(ctx context.Context, store *alloc.StoreClient, reached *atomic.Bool, logger *slog.Logger) {
	delay := 50 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := store.ClusterStatus(cctx)
		cancel()
		if err == nil && st.GetLeaderId() != "" {
			reached.Store(true)
			logger.Info("store reached", "leader", st.GetLeaderId(), "term", st.GetTerm())
			return
		}
		logger.Debug("store not reached yet", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
