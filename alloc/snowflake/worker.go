package snowflake

import (
	"context"
	"fmt"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// WorkerStore is the part of the store the snowflake side needs
// (*storeclient.Client in production, a fake in unit tests).
type WorkerStore interface {
	RegisterWorker(ctx context.Context, req *seqsvrv1.RegisterWorkerRequest) (*seqsvrv1.Worker, error)
	RenewWorker(ctx context.Context, req *seqsvrv1.RenewWorkerRequest) (*seqsvrv1.Worker, error)
	ClusterStatus(ctx context.Context) (*seqsvrv1.ClusterStatusResponse, error)
}

// ErrClockOffset: the local clock differs from the store leader's by more
// than Config.MaxClockOffset. Start returns it (wrapped,
// with the measured offset) so the binary can refuse to start.
var ErrClockOffset = errs.New(errs.FailedPrecondition, "clock offset beyond tolerance")

// workerLease is the snowflake side's view of its worker lease. A new value
// is stored on every registration, renewal and loss; readers never lock.
type workerLease struct {
	workerID       int64
	fenceAt        time.Time // local clock: refuse IDs from here on
	leaseExpiresMs int64     // the store leader's clock
	lostReason     string    // non-empty: refuse IDs whatever the time
	fromCache      bool
}

// workerLeaseLost reports whether the store definitely refused a renewal
// or registration (errs.Judge): the lease is held by another process, or
// unknown to the store, or the request is refused for good. Repeating the
// same call cannot help; only a new registration can, and until it
// succeeds no ID is issued. Anything else (no answer, unavailable) keeps
// the lease until its fence and is tried again.
func workerLeaseLost(err error) bool {
	return errs.Judge(errs.StoreCall, err).Definite
}

// workerTTL is the lease TTL the store granted.
func workerTTL(w *seqsvrv1.Worker) time.Duration {
	switch {
	case w.GetLeaseTtlMs() > 0:
		return time.Duration(w.GetLeaseTtlMs()) * time.Millisecond
	case w.GetLeaderNowMs() > 0 && w.GetLeaseExpiresMs() > w.GetLeaderNowMs():
		return time.Duration(w.GetLeaseExpiresMs()-w.GetLeaderNowMs()) * time.Millisecond
	}
	return spec.DefaultWorkerLeaseTTL
}

// fenceAfter is how long after sending a successful registration or
// renewal this process may keep issuing IDs. The lease on the store starts
// no earlier than the send, so stopping margin before TTL keeps this
// process ahead of any other holder.
func (s *Service) fenceAfter(ttl time.Duration) time.Duration {
	if d := ttl - s.cfg.FenceMargin; d > 0 {
		return d
	}
	return ttl / 2
}

// ceiling is the largest timestamp the lease lets this process issue: the
// store's floor for any later holder is at least our last reported time
// plus the TTL, so staying margin below it keeps timestamp ranges apart
// even when the wall clock jumps forward.
func (s *Service) ceiling(sent time.Time, ttl time.Duration) int64 {
	if noSelfFence() {
		return noLimit
	}
	return sent.UnixMilli() + s.fenceAfter(ttl).Milliseconds()
}

// registerWorker registers this process's instance with the store, checks
// the clocks and (re)configures the generator. On error nothing changes,
// except that the store may hold a lease we do not use.
func (s *Service) registerWorker(ctx context.Context) error {
	sent := s.clock.Now()
	w, err := s.store.RegisterWorker(ctx, &seqsvrv1.RegisterWorkerRequest{
		NodeId: s.cfg.NodeID, NowMs: sent.UnixMilli(), InstanceId: s.instanceID,
	})
	recv := s.clock.Now()
	if err != nil {
		s.metrics.registers.WithLabelValues("error").Inc()
		return fmt.Errorf("register snowflake worker: %w", err)
	}
	lay, err := newLayout(w.GetLayout())
	if err != nil {
		s.metrics.registers.WithLabelValues("error").Inc()
		return fmt.Errorf("register snowflake worker: store answered %w", err)
	}
	if w.GetWorkerId() < 0 || w.GetWorkerId() > lay.workerMask {
		s.metrics.registers.WithLabelValues("error").Inc()
		return fmt.Errorf("register snowflake worker: store answered worker ID %d outside 0..%d", w.GetWorkerId(), lay.workerMask)
	}
	offset, measured, err := s.measureOffset(ctx, sent, recv, w.GetLeaderNowMs())
	if err != nil {
		s.metrics.registers.WithLabelValues("error").Inc()
		return fmt.Errorf("register snowflake worker: %w", err)
	}
	if measured {
		if off := time.Duration(offset) * time.Millisecond; off > s.cfg.MaxClockOffset || -off > s.cfg.MaxClockOffset {
			s.metrics.registers.WithLabelValues("clock_offset").Inc()
			return fmt.Errorf("%w: local clock is %dms off the store leader's (tolerance %s); fix the clock (NTP) before serving snowflake IDs",
				ErrClockOffset, offset, s.cfg.MaxClockOffset)
		}
	}

	ttl := workerTTL(w)
	ceiling := s.ceiling(sent, ttl)
	floor := w.GetLastTimestampMs()
	hwm := floor
	if s.cache != nil {
		d, ok := s.cache.loaded()
		if ok && d.NodeID == s.cfg.NodeID && d.WorkerID == w.GetWorkerId() && lay.equal(cacheLayout(d)) && !ignoreHighWater() {
			floor = max(floor, d.HighWaterMs) // our own earlier IDs
		}
		hwm = max(d.HighWaterMs, floor)
		if err := s.cache.update(func(c *cacheData) {
			c.NodeID, c.WorkerID, c.InstanceID = s.cfg.NodeID, w.GetWorkerId(), s.instanceID
			c.EpochMs, c.TimestampBits, c.WorkerBits, c.SequenceBits = lay.epochMs, int32(lay.tsBits), int32(lay.workerBits), int32(lay.seqBits)
			// The generator may Reserve past hwm between loaded() and this
			// update; the durable mark must never move down under it.
			c.HighWaterMs = max(c.HighWaterMs, hwm)
			c.LeaseValidUntilMs, c.LeaseExpiresMs = ceiling, w.GetLeaseExpiresMs()
		}); err != nil {
			s.metrics.registers.WithLabelValues("error").Inc()
			return fmt.Errorf("register snowflake worker: write the data-dir cache: %w", err)
		}
	}

	gen := s.gen.Load()
	if gen == nil || gen.lay != lay {
		if gen != nil {
			floor = max(floor, gen.LastTimestampMs())
		}
		opts := []Option{WithMaxBackwardWait(s.cfg.MaxBackwardWait), WithCeiling(ceiling),
			withBackwardHooks(s.metrics.backWaits.Inc, s.metrics.backRefusals.Inc)}
		if s.cache != nil {
			opts = append(opts, withHighWater(s.cache, hwm, highWaterAhead))
		}
		if gen, err = NewGenerator(lay.proto(), w.GetWorkerId(), floor, s.clock, opts...); err != nil {
			return err
		}
		s.gen.Store(gen)
	} else if err := gen.reassign(w.GetWorkerId(), floor, ceiling); err != nil {
		return err
	}
	s.lease.Store(&workerLease{
		workerID:       w.GetWorkerId(),
		fenceAt:        sent.Add(s.fenceAfter(ttl)),
		leaseExpiresMs: w.GetLeaseExpiresMs(),
	})

	s.mu.Lock()
	s.needRegister = false
	s.mu.Unlock()
	s.leaseGranted(ttl, offset, measured)
	s.metrics.registers.WithLabelValues("ok").Inc()
	if s.fenceAfter(ttl) <= s.cfg.RenewInterval {
		s.log.Warn("snowflake lease TTL minus fence margin is not above the renew interval; one slow renewal fences",
			"ttl", ttl, "fence_margin", s.cfg.FenceMargin, "renew_interval", s.cfg.RenewInterval)
	}
	s.log.Info("snowflake worker registered", "node_id", s.cfg.NodeID, "worker_id", w.GetWorkerId(),
		"instance_id", s.instanceID, "floor_ms", floor, "lease_ttl", ttl, "lease_expires", formatMs(w.GetLeaseExpiresMs()),
		"clock_offset_ms", offset, "clock_checked", measured)
	return nil
}

// measureOffset estimates local minus leader clock in ms, taking the local
// time at the midpoint of the round trip, so the error is at most half the
// round trip. A slow round trip (the store client retried, a leader
// changed) is not trusted: ClusterStatus, a quick read, measures again.
// measured is false when the store reports no clock at all; an error means
// the clock could not be checked precisely enough this time.
func (s *Service) measureOffset(ctx context.Context, sent, recv time.Time, leaderNowMs int64) (offset int64, measured bool, err error) {
	maxRTT := s.cfg.MaxClockOffset / 2
	if leaderNowMs > 0 && recv.Sub(sent) <= maxRTT {
		return sent.Add(recv.Sub(sent)/2).UnixMilli() - leaderNowMs, true, nil
	}
	sent = s.clock.Now()
	cs, csErr := s.store.ClusterStatus(ctx)
	recv = s.clock.Now()
	switch {
	case csErr == nil && cs.GetNowMs() > 0 && recv.Sub(sent) <= maxRTT:
		return sent.Add(recv.Sub(sent)/2).UnixMilli() - cs.GetNowMs(), true, nil
	case leaderNowMs <= 0 && (csErr != nil || cs.GetNowMs() <= 0):
		s.log.Warn("snowflake clock check skipped: the store reports no clock", "err", csErr)
		return 0, false, nil
	case csErr != nil:
		return 0, false, fmt.Errorf("clock check: %w", csErr)
	}
	return 0, false, fmt.Errorf("%w: clock check inconclusive: store round trip %s exceeds %s", errs.Unavailable, recv.Sub(sent), maxRTT)
}

// renewWorker heartbeats the lease with the current time.
func (s *Service) renewWorker(ctx context.Context) error {
	l := s.lease.Load()
	gen := s.gen.Load()
	if l == nil || gen == nil {
		return nil
	}
	sent := s.clock.Now()
	w, err := s.store.RenewWorker(ctx, &seqsvrv1.RenewWorkerRequest{
		NodeId: s.cfg.NodeID, WorkerId: l.workerID, NowMs: sent.UnixMilli(), InstanceId: s.instanceID,
	})
	recv := s.clock.Now()
	if err == nil && w.GetWorkerId() != l.workerID {
		err = fmt.Errorf("%w: store renewed worker ID %d, we hold %d", errs.FailedPrecondition, w.GetWorkerId(), l.workerID)
	}
	if err != nil {
		if workerLeaseLost(err) {
			s.metrics.renewals.WithLabelValues("lost").Inc()
			s.loseLease(l, fmt.Sprintf("worker lease taken by another process: %v", err))
		} else {
			s.metrics.renewals.WithLabelValues("error").Inc()
		}
		return fmt.Errorf("renew snowflake worker %d: %w", l.workerID, err)
	}
	ttl := workerTTL(w)
	ceiling := s.ceiling(sent, ttl)
	if s.cache != nil {
		// Best effort: a stale cached bound is only more conservative.
		if err := s.cache.update(func(c *cacheData) {
			c.LeaseValidUntilMs, c.LeaseExpiresMs = ceiling, w.GetLeaseExpiresMs()
		}); err != nil {
			s.log.Warn("snowflake cache not updated", "err", err)
		}
	}
	gen.setCeiling(ceiling)
	if !s.lease.CompareAndSwap(l, &workerLease{
		workerID: l.workerID, fenceAt: sent.Add(s.fenceAfter(ttl)), leaseExpiresMs: w.GetLeaseExpiresMs(),
	}) {
		return nil // a registration replaced the lease meanwhile; it wins
	}
	offset, measured, _ := s.measureOffset(ctx, sent, recv, w.GetLeaderNowMs())
	s.leaseGranted(ttl, offset, measured)
	s.metrics.renewals.WithLabelValues("ok").Inc()
	if l.lostReason != "" || !sent.Before(l.fenceAt) {
		s.log.Info("snowflake worker lease renewed again; serving", "worker_id", l.workerID)
	}
	return nil
}

// leaseGranted records a successful registration or renewal: no error to
// report, the TTL the store granted and, when measured, the clock offset.
func (s *Service) leaseGranted(ttl time.Duration, offset int64, measured bool) {
	s.mu.Lock()
	s.lastErr, s.heldElsewhere, s.ttl = "", false, ttl
	if measured {
		s.clockOffsetMs = offset
	}
	s.mu.Unlock()
	if measured {
		s.metrics.clockOffset.Set(float64(offset))
	}
}

// loseLease fences until a registration succeeds.
func (s *Service) loseLease(l *workerLease, reason string) {
	lost := *l
	lost.lostReason = reason
	s.lease.CompareAndSwap(l, &lost)
	s.mu.Lock()
	s.needRegister, s.lastErr = true, reason
	s.mu.Unlock()
	s.log.Error("snowflake worker lease lost; refusing snowflake IDs until re-registered", "worker_id", l.workerID, "reason", reason)
}

// startFromCache serves from the data-dir cache while the store is
// unreachable, but only within what the last lease proved: timestamps above
// the persisted high-water mark (above everything issued before) and at or
// below the cached lease bound (below any later holder's floor).
func (s *Service) startFromCache() bool {
	if s.cache == nil {
		return false
	}
	d, ok := s.cache.loaded()
	if !ok || d.NodeID != s.cfg.NodeID {
		return false
	}
	lay, err := newLayout(cacheLayout(d))
	if err != nil {
		return false
	}
	now := s.clock.Now()
	nowMs := now.UnixMilli()
	if nowMs >= d.LeaseValidUntilMs || d.HighWaterMs >= d.LeaseValidUntilMs {
		s.log.Info("snowflake cache not usable: its lease bound has passed", "worker_id", d.WorkerID,
			"lease_valid_until", formatMs(d.LeaseValidUntilMs), "high_water", formatMs(d.HighWaterMs))
		return false
	}
	ceiling := d.LeaseValidUntilMs
	if noSelfFence() {
		ceiling = noLimit
	}
	gen, err := NewGenerator(lay.proto(), d.WorkerID, d.HighWaterMs, s.clock,
		WithMaxBackwardWait(s.cfg.MaxBackwardWait), WithCeiling(ceiling),
		withHighWater(s.cache, d.HighWaterMs, highWaterAhead),
		withBackwardHooks(s.metrics.backWaits.Inc, s.metrics.backRefusals.Inc))
	if err != nil {
		return false
	}
	s.gen.Store(gen)
	s.lease.Store(&workerLease{
		workerID:       d.WorkerID,
		fenceAt:        now.Add(time.Duration(d.LeaseValidUntilMs-nowMs) * time.Millisecond),
		leaseExpiresMs: d.LeaseExpiresMs,
		fromCache:      true,
	})
	s.mu.Lock()
	s.needRegister = true
	s.mu.Unlock()
	s.log.Warn("snowflake serving from the data-dir cache while the store is unreachable",
		"worker_id", d.WorkerID, "until", formatMs(d.LeaseValidUntilMs), "above", formatMs(d.HighWaterMs))
	return true
}

func cacheLayout(d cacheData) *seqsvrv1.SnowflakeLayout {
	return &seqsvrv1.SnowflakeLayout{EpochMs: d.EpochMs, TimestampBits: d.TimestampBits, WorkerBits: d.WorkerBits, SequenceBits: d.SequenceBits}
}
