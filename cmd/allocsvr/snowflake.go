package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/alloc/snowflake"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/clock"
)

// registerWait bounds how long the first registration may block before
// the generator is handed to the service anyway (it then answers
// unavailable, or serves from a provably safe cache, and keeps registering
// in the background).
const registerWait = 5 * time.Second

// runSnowflake starts the snowflake generator off the main path, so
// segment IDs are served while the store is down at start. A failed clock
// check (or any other startup error, such as a data dir held by another
// process) is fatal: the process exits with a clear log line rather than
// risk duplicate IDs. It returns the function that releases the generator.
func runSnowflake(ctx context.Context, fatal func(error), cfg *config, store *storeclient.Client, svc *alloc.Service, reg prometheus.Registerer, logger *slog.Logger) func() {
	log := logger.With("component", "snowflake")
	svc.SetSnowflakeReason("snowflake worker registering")
	rctx, cancel := context.WithTimeout(ctx, registerWait)
	defer cancel()
	sf, err := snowflake.Start(rctx, store, snowflake.Config{
		NodeID:          cfg.NodeID,
		DataDir:         cfg.DataDir,
		Clock:           clock.System(),
		Logger:          logger,
		RenewInterval:   cfg.SnowflakeRenewInterval,
		FenceMargin:     cfg.SnowflakeFenceMargin,
		MaxClockOffset:  cfg.SnowflakeMaxClockOffset,
		MaxBackwardWait: cfg.SnowflakeMaxBackward,
		Registerer:      reg,
	})
	if err != nil {
		if ctx.Err() != nil { // shutting down anyway
			return func() {}
		}
		if errors.Is(err, snowflake.ErrClockOffset) {
			log.Error("snowflake clock check failed; exiting. Fix the clock (NTP) or raise --snowflake-max-clock-offset", "node_id", cfg.NodeID, "err", err)
		} else {
			log.Error("snowflake cannot start; exiting", "node_id", cfg.NodeID, "data_dir", cfg.DataDir, "err", err)
		}
		fatal(err)
		return func() {}
	}
	store.OnClusterChange(func(was, now string) {
		sf.Takeover(fmt.Sprintf("the store's cluster ID changed from %s to %s (restored or recovered); registering again", was, now))
	})
	svc.SetSnowflake(sf)
	st := sf.Status()
	log.Info("snowflake started", "node_id", cfg.NodeID, "worker_id", st.GetWorkerId(), "fenced", st.GetFenced(), "reason", st.GetReason(), "clock_offset_ms", st.GetClockOffsetMs())
	return sf.Close
}
