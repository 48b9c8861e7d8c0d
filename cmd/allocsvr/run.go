package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/alloc/segment"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/web"
)

// Process serves cfg: serve.Main runs it.
func (cfg *config) Process() serve.Process {
	return serve.Process{Addr: cfg.HTTPAddr, Common: cfg.Common, Open: cfg.open}
}

// open builds the allocators: the store client, the segment buffers, the
// per-key sequence node and, off the main path, the snowflake generator.
// Close releases the per-key sections, the generator, then the buffers.
func (cfg *config) open(ctx context.Context, env serve.Env) (*serve.App, error) {
	logger := env.Logger
	peers, err := cfg.peerAccess(env)
	if err != nil {
		return nil, err
	}
	store, err := cfg.storeClient(peers, logger)
	if err != nil {
		return nil, err
	}
	seg := segment.New(store, segment.Config{
		MaxStep:          cfg.MaxStep,
		PrefetchRatio:    cfg.PrefetchRatio,
		EmptyWait:        cfg.EmptyWait,
		LoadTimeout:      cfg.LoadTimeout,
		NegativeCacheTTL: cfg.NegativeCacheTTL,
		Logger:           logger.With("component", "segment"),
		Registerer:       env.Registry,
	})
	svc := alloc.NewService(cfg.NodeID, seg)
	exposeFence(env.Registry, store, svc)
	table := svc.Routes()
	handover, closeSeq := func() {}, func() {}
	if cfg.Seq {
		n, release, err := openSeq(ctx, cfg, env, store, svc, peers)
		if err != nil {
			return nil, err
		}
		// On SIGTERM the sections are released before the server stops
		// accepting (serve.App.Handover), so the drain costs no per-key
		// outage; Close releases them if that did not run.
		handover = sync.OnceFunc(n.Close)
		table, closeSeq = table.Add(n.Routes()), func() { handover(); release() }
	}

	changes := promauto.With(env.Registry).NewCounter(prometheus.CounterOpts{
		Name: "seqsvr_alloc_store_cluster_changes_total",
		Help: "Times the store's cluster ID changed under this allocsvr (restored or recovered): each time it gave up its snowflake worker lease and per-key sections and registered again.",
	})
	store.OnClusterChange(func(string, string) { changes.Inc() })
	var reached atomic.Bool
	go watchStore(ctx, store, &reached, logger)
	ready := func(context.Context) error {
		if !reached.Load() {
			return errors.New("store not reached yet")
		}
		return nil
	}

	sfDone := make(chan func(), 1)
	if cfg.Snowflake {
		go func() { sfDone <- runSnowflake(ctx, env.Fatal, cfg, store, svc, env.Registry, logger) }()
	} else {
		svc.SetSnowflakeReason("snowflake disabled (--snowflake=false)")
		sfDone <- func() {}
	}

	return &serve.App{
		Routes: table,
		Handler: serve.Options{
			Ready: ready,
			Page:  web.AllocPage,
		},
		Attrs:    []any{"node_id", cfg.NodeID, "stores", cfg.Stores, "snowflake", cfg.Snowflake, "seq", cfg.Seq},
		Handover: handover,
		Close: func() {
			closeSeq()
			closeSnowflake := <-sfDone
			closeSnowflake()
			seg.Close()
		},
	}, nil
}

// clusterCheckInterval is how often the allocsvr asks the store for its
// cluster ID once it reached it: a store restored on the same addresses
// may answer every call as if nothing happened, and the snowflake lease
// and per-key sections it granted are void there.
const clusterCheckInterval = 2 * time.Second

// watchStore marks the allocsvr ready once any store member answered with
// a leader, then keeps asking every member for the cluster status
// (Survey), so a cluster restored elsewhere is found and followed (the
// store client calls the takeover hooks) and old members that come back
// are refused and counted. Ready stays true afterwards: buffers keep
// serving through store outages, which is the point of the double buffer.
func watchStore(ctx context.Context, store *storeclient.Client, reached *atomic.Bool, logger *slog.Logger) {
	delay := 50 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := store.Survey(cctx)
		cancel()
		switch {
		case err == nil && st.GetLeaderId() != "" && !reached.Load():
			reached.Store(true)
			logger.Info("store reached", "leader", st.GetLeaderId(), "term", st.GetTerm(), "cluster_id", st.GetClusterId())
			delay = clusterCheckInterval
		case !reached.Load():
			logger.Debug("store not reached yet", "err", err)
			delay = min(2*delay, time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}
