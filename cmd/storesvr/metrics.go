package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/storage"
)

// storeMetrics are the storesvr's own gauges beside raft's: what the
// alerts on readiness, lag, backups, worker IDs and certificates read.
type storeMetrics struct {
	lastBackup prometheus.Gauge
}

// newStoreMetrics makes the gauges and hooks the backup time into scfg.
func newStoreMetrics(scfg *storage.Config) *storeMetrics {
	m := &storeMetrics{lastBackup: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seqsvr_store_last_backup_timestamp_seconds",
		Help: "Unix time of the last whole backup this member answered (taken as the leader, or relayed); 0 before the first since it started.",
	})}
	scfg.OnBackup = func(at time.Time) { m.lastBackup.Set(float64(at.UnixNano()) / 1e9) }
	return m
}

// register adds the gauges of st, and the expiry of the serving
// certificate, to env's registry.
func (m *storeMetrics) register(env serve.Env, st *storage.Store) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	workers := func(limit bool) func() float64 {
		return func() float64 {
			in, max := st.WorkerIDs()
			if limit {
				return float64(max)
			}
			return float64(in)
		}
	}
	for _, c := range []prometheus.Collector{
		m.lastBackup,
		gauge("seqsvr_store_ready", "1 while this member is ready (what /readyz answers 200 for: a known leader, a member, caught up), else 0.", func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if st.Ready(ctx) != nil {
				return 0
			}
			return 1
		}),
		// Elections raise the term, which survives restarts: unlike raft's
		// own raft_state_leader counter, which a process exports only once
		// it has been leader, so the first election of each process never
		// shows in an increase().
		gauge("seqsvr_store_term", "This member's current Raft term: every election raises it.", func() float64 { return float64(st.Raft().CurrentTerm()) }),
		gauge("seqsvr_store_commit_index", "The highest Raft log index this member knows committed (the leader's is the cluster's).", func() float64 { return float64(st.Raft().CommitIndex()) }),
		gauge("seqsvr_store_applied_index", "The highest Raft log index this member applied to its state.", func() float64 { return float64(st.Raft().AppliedIndex()) }),
		gauge("seqsvr_store_worker_ids_in_use", "Snowflake worker IDs held by a lease or within --worker-retention of its end (not reclaimable), in this member's state.", workers(false)),
		gauge("seqsvr_store_worker_ids_limit", "Snowflake worker IDs the layout has (2^worker_bits): registrations fail beyond it.", workers(true)),
	} {
		if err := env.Registry.Register(c); err != nil {
			return err
		}
	}
	return serve.RegisterCertExpiry(env.Registry, "serving", env.TLSKeys)
}
