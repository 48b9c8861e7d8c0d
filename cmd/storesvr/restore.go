package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/storage"
	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/recovery"
)

// leaseMargin is added to the longest lease TTL before a restored cluster
// grants worker IDs and sections: an allocsvr of the lost cluster stops
// within one TTL (minus its own fence margin) of its last renewal, which
// was before the restore started.
const leaseMargin = 2 * time.Second

// restoreFlags are --restore, --restore-jump, --restore-min-jump and
// --recover.
type restoreFlags struct {
	Restore     string
	RestoreJump time.Duration
	MinJump     int64
	Recover     bool
	// RecoverLost: the members the operator knows to be gone for good
	// (--recover-lost); only they may be unreachable (peersGone).
	RecoverLost []string
}

// rewrite runs --restore or --recover on the data dir before the store
// opens; nothing to do without them.
func (cfg *config) rewrite(ctx context.Context, scfg storage.Config, logger *slog.Logger) error {
	switch {
	case cfg.Restore != "":
		return cfg.restore(scfg, logger)
	case cfg.Recover:
		return cfg.recover(ctx, scfg, logger)
	}
	return nil
}

func (cfg *config) restore(scfg storage.Config, logger *slog.Logger) error {
	start := time.Now()
	file, err := os.ReadFile(cfg.Restore)
	if err != nil {
		return fmt.Errorf("--restore: %w", err)
	}
	b, err := backup.Decode(file)
	if err == nil {
		err = backup.Validate(b, start)
	}
	if err != nil {
		return fmt.Errorf("--restore %s: %w", cfg.Restore, err)
	}
	sum := sha256.Sum256(file)
	// The lost cluster's generation, whichever of the two places holds it.
	b.State.Generation = max(b.GetState().GetGeneration(), b.GetGeneration())
	age := start.Sub(time.UnixMilli(b.GetLeaderTimeMs()))
	st, err := cfg.prepare(b.GetState(), age, start, b.GetMaxSegmentSize(), max(b.GetWorkerLeaseTtlMs(), b.GetSeqLeaseTtlMs()), logger)
	if err != nil {
		return err
	}
	err = storage.Seed(scfg, st, hex.EncodeToString(sum[:]))
	if errors.Is(err, storage.ErrDone) {
		logger.Warn("--restore: the data dir was already restored from this backup; starting from it", "backup", cfg.Restore)
		return nil
	}
	if err != nil {
		return err
	}
	logger.Info("restored a new cluster from a backup", "backup", cfg.Restore, "old_cluster_id", b.GetClusterId(), "cluster_id", st.GetClusterId(),
		"old_generation", b.GetState().GetGeneration(), "generation", st.GetGeneration(),
		"backup_time", time.UnixMilli(b.GetLeaderTimeMs()).UTC(), "age", age.Round(time.Millisecond), "raft_index", b.GetRaftIndex(),
		"grants_from", time.UnixMilli(st.GetRestoreFenceMs()).UTC(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func (cfg *config) recover(ctx context.Context, scfg storage.Config, logger *slog.Logger) error {
	start := time.Now()
	var old, made *seqsvrv1.FSMSnapshot
	err := storage.Recover(scfg, func(cur *seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error) {
		if err := peersGone(storage.ProbePeers(ctx, scfg, cur), cfg.RecoverLost, cur, scfg.NodeID); err != nil {
			return nil, err
		}
		if len(cfg.RecoverLost) > 0 {
			logger.Warn("--recover: going on without members the operator named lost", "lost", cfg.RecoverLost)
		}
		old = cur
		age := start.Sub(time.UnixMilli(cur.GetLastNowMs()))
		st, err := cfg.prepare(cur, age, start, 0, 0, logger)
		made = st
		return st, err
	})
	if errors.Is(err, storage.ErrDone) {
		logger.Warn("--recover: the data dir already holds the recovered cluster; starting from it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("--recover: %w", err)
	}
	logger.Info("recovered a one-member cluster from this member's data", "old_cluster_id", old.GetClusterId(), "cluster_id", made.GetClusterId(),
		"old_generation", old.GetGeneration(), "generation", made.GetGeneration(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// prepare jumps st for a new cluster and logs every jump. maxSeg and
// leaseMs are the lost cluster's (0: unknown), this member's own are used
// when larger.
func (cfg *config) prepare(st *seqsvrv1.FSMSnapshot, age time.Duration, start time.Time, maxSeg, leaseMs int64, logger *slog.Logger) (*seqsvrv1.FSMSnapshot, error) {
	over := cfg.RestoreJump
	if over == 0 {
		over = recovery.DefaultOver(age)
	}
	lease := max(time.Duration(leaseMs)*time.Millisecond, orDefault(cfg.WorkerLeaseTTL, spec.DefaultWorkerLeaseTTL), orDefault(cfg.SeqLeaseTTL, spec.DefaultSeqLeaseTTL))
	out, jumps, err := recovery.Prepare(st, recovery.Options{
		Over: over, MinJump: cfg.MinJump, MaxSegmentSize: max(maxSeg, cfg.MaxSegmentSize),
		Start: start, LeaseWait: lease + leaseMargin, ClusterID: storage.NewClusterID(), Generation: start.UnixMilli(),
	})
	if err != nil {
		return nil, err
	}
	logger.Info("jumping every counter past what the lost cluster could have handed out", "state_age", age.Round(time.Millisecond),
		"jump_over", over, "min_jump", cfg.MinJump, "counters", len(jumps))
	for _, j := range jumps {
		logger.Info("jump " + j.String())
	}
	return out, nil
}

// orDefault is d, or def when d is not positive (unset).
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
