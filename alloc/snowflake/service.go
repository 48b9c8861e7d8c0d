package snowflake

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Internal timing, not configuration.
const highWaterAhead = time.Second

// Config configures Start. Zero values take DefaultConfig's.
type Config struct {
	NodeID  string
	DataDir string      // "" = no cache (restarts rely on the store alone)
	Clock   clock.Clock // nil = clock.System()
	Logger  *slog.Logger
	// RenewInterval between lease renewals (default 3 s).
	RenewInterval time.Duration
	// FenceMargin: IDs stop once no renewal sent within the last
	// lease TTL minus this succeeded (default 2 s).
	FenceMargin time.Duration
	// MaxClockOffset tolerated between the local clock and the store
	// leader's at registration (default 1 s).
	MaxClockOffset time.Duration
	// MaxBackwardWait: a clock step back up to this is waited out (default
	// 5 ms); more answers errs.Unavailable.
	MaxBackwardWait time.Duration
	// RegisterBackoff is the pause after a failed registration (default
	// 100 ms), doubling (jittered, errs.Backoff) up to RenewInterval.
	RegisterBackoff time.Duration
	Registerer      prometheus.Registerer // optional
}

// Service serves snowflake IDs under a worker ID leased from the store.
//
// Guarantees, on top of the Generator's (strictly increasing IDs,
// waiting out small backward clock steps, refusing large ones):
//
//   - No overlap with another holder of the worker ID. The store refuses a
//     second live holder; this process stops issuing once no renewal
//     sent within lease TTL minus FenceMargin succeeded (measured on the
//     monotonic clock), and never issues a timestamp above its last
//     successful report plus TTL minus FenceMargin (wall clock), which the
//     store puts below any later holder's floor.
//   - No timestamp at or below the store's floor for the worker ID, nor at
//     or below one issued before a restart: a high-water mark is fsync'd to
//     DataDir ahead of every timestamp issued and is the floor after a
//     restart.
//   - A restart while the store is unreachable serves from the cache only
//     inside the last lease's bounds (above the high-water mark, at or below
//     the cached lease bound); otherwise it answers errs.Unavailable and keeps
//     registering in the background.
type Service struct {
	cfg        Config
	store      WorkerStore
	clock      clock.Clock
	log        *slog.Logger
	instanceID string
	cache      *cache
	metrics    *metrics

	gen    atomic.Pointer[Generator]
	lease  atomic.Pointer[workerLease]
	closed atomic.Bool

	mu           sync.Mutex
	needRegister bool
	lastErr      string
	// heldElsewhere: the last registration was refused because another
	// live instance holds this node ID's lease (a twin with the same
	// --node-id); answered as failed_precondition, as the contract says.
	heldElsewhere bool
	heldDetail    string
	// hwFailing: the generator's last write of its high-water mark failed
	// (logged once per change).
	hwFailing     bool
	clockOffsetMs int64
	ttl           time.Duration

	cancel    context.CancelFunc
	done      chan struct{}
	kick      chan struct{} // wakes run at once (Takeover)
	closeOnce sync.Once
}

// Start registers a worker for cfg.NodeID, checks the clock against
// the store leader's, and starts renewing the lease.
//
// It blocks until the registration succeeds, the clock check fails or ctx
// is done; callers should pass a ctx with a timeout (a few seconds), since
// the store may be down at start. Errors:
//   - wrapping ErrClockOffset: the clock is off; the binary should exit.
//   - wrapping errs.InvalidArgument: bad config.
//   - the data dir is locked by another process.
//
// When ctx ends before a registration succeeded it does not fail: it
// returns a Service that serves from the data-dir cache if that is
// provably safe, otherwise answers errs.Unavailable, and keeps registering in
// the background either way. Always Close the result.
func Start(ctx context.Context, store WorkerStore, cfg Config) (*Service, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: snowflake needs a worker store", errs.InvalidArgument)
	}
	if cfg.NodeID == "" {
		return nil, fmt.Errorf("%w: snowflake needs a node ID", errs.InvalidArgument)
	}
	cfg = cfg.withDefaults()
	s := &Service{
		cfg:        cfg,
		store:      store,
		clock:      cfg.Clock,
		log:        cfg.Logger.With("component", "snowflake"),
		instanceID: newInstanceID(),
		done:       make(chan struct{}),
		kick:       make(chan struct{}, 1),
	}
	s.metrics = newMetrics(cfg.Registerer, s)
	if noSelfFence() {
		s.log.Warn(plantedNote("snowflake IDs keep flowing after the lease is lost"))
	}
	if cfg.DataDir != "" {
		c, err := openCache(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		s.cache = c
		// The data-dir lock proves the previous holder of this cache is dead,
		// and its high-water mark bounds every timestamp it issued. Keeping
		// its instance ID lets the store hand the lease straight back instead
		// of raising the floor by a whole lease TTL for a restart on the same
		// data dir. A twin elsewhere has its own data dir, so a new instance ID.
		if d, ok := c.loaded(); ok && d.NodeID == cfg.NodeID && d.InstanceID != "" {
			s.instanceID = d.InstanceID
		}
	}
	if err := s.initialRegister(ctx); err != nil {
		s.cache.close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(runCtx)
	return s, nil
}

// DefaultConfig is the configuration where the caller sets nothing but
// the required NodeID: every default of the snowflake side, defined here
// only (the allocsvr's flags show these values). A zero field of the
// Config given to Start takes its value from here.
func DefaultConfig() Config {
	return Config{
		Clock:           clock.System(),
		Logger:          slog.Default(),
		RenewInterval:   3 * time.Second,
		FenceMargin:     2 * time.Second,
		MaxClockOffset:  time.Second,
		MaxBackwardWait: 5 * time.Millisecond,
		RegisterBackoff: 100 * time.Millisecond,
	}
}

// withDefaults returns cfg with every unset field given its DefaultConfig
// value.
func (cfg Config) withDefaults() Config {
	d := DefaultConfig()
	if cfg.Clock == nil {
		cfg.Clock = d.Clock
	}
	if cfg.Logger == nil {
		cfg.Logger = d.Logger
	}
	for _, f := range []struct{ v, d *time.Duration }{
		{&cfg.RenewInterval, &d.RenewInterval},
		{&cfg.FenceMargin, &d.FenceMargin},
		{&cfg.MaxClockOffset, &d.MaxClockOffset},
		{&cfg.MaxBackwardWait, &d.MaxBackwardWait},
		{&cfg.RegisterBackoff, &d.RegisterBackoff},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return cfg
}

// newInstanceID names this process lifetime for the store's lease.
func newInstanceID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// registerBackoff spaces registrations after failures.
func (cfg Config) registerBackoff() errs.Backoff {
	return errs.Backoff{Min: cfg.RegisterBackoff, Max: cfg.RenewInterval}
}

// initialRegister registers until it succeeds, the store refuses it
// definitely (errs.Retry under the store caller's rule), or ctx ends; in
// the last two cases the background loop (run) keeps registering.
func (s *Service) initialRegister(ctx context.Context) error {
	p := errs.Policy{Caller: errs.StoreCall, Backoff: s.cfg.registerBackoff(),
		OnFailure: func(attempt int, err error, v errs.Verdict) {
			s.setErr(err)
			if v.Retry && ctx.Err() == nil {
				s.log.Warn("snowflake worker registration failed; retrying", "attempt", attempt, "err", err)
			}
		}}
	err := errs.Retry(ctx, p, func(ctx context.Context, _ int) error {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RenewInterval)
		defer cancel()
		return s.registerWorker(rctx)
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClockOffset):
		s.log.Error("snowflake refuses to start: clock offset", "err", err)
		return err
	case errs.Code(err) == connect.CodeFailedPrecondition && ctx.Err() == nil:
		// A twin: waiting here would only delay the answer callers
		// need (failed_precondition); keep registering in the
		// background, which succeeds once the holder's lease expires.
		s.log.Error("snowflake: this --node-id is held by another live process; snowflake IDs answer failed_precondition until its lease expires. Give every allocsvr its own --node-id",
			"node_id", s.cfg.NodeID, "err", err)
		return nil
	}
	// The caller's deadline, or another definite refusal: serve from the
	// cache where provably safe, and register in the background.
	if !s.startFromCache() {
		s.log.Warn("snowflake IDs unavailable until the worker registers; registering in the background", "err", err)
	}
	return nil
}

// run renews the lease every RenewInterval, or registers again (spaced by
// registerBackoff) while there is no usable lease. A renewal is one call
// (the store client's own retries stay within its RenewInterval
// deadline): the fence stops IDs on the clock whatever the store
// answers, so a renewal is never retried past it, only sent again at the
// next interval. Registering is retried whatever the store answers: it
// is this loop's whole job, and a lease held elsewhere expires.
func (s *Service) run(ctx context.Context) {
	defer close(s.done)
	backoff := s.cfg.registerBackoff()
	failures := 0 // registrations failed in a row
	delay := s.cfg.RenewInterval
	if s.needsRegister() {
		delay = backoff.Pause(1)
	}
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.kick:
			t.Stop()
		}
		delay = s.cfg.RenewInterval
		if gen := s.gen.Load(); gen != nil {
			// Without calls, this is what notices the disk has room again.
			_ = s.highWater(gen)
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RenewInterval)
		if s.needsRegister() {
			if err := s.registerWorker(rctx); err != nil {
				s.setErr(err)
				lvl := slog.LevelWarn
				if errors.Is(err, ErrClockOffset) {
					lvl = slog.LevelError
				}
				s.log.Log(ctx, lvl, "snowflake worker registration failed; retrying", "err", err)
				failures++
				delay = backoff.Pause(failures)
			} else {
				failures = 0
			}
		} else if err := s.renewWorker(rctx); err != nil {
			s.setErr(err)
			s.log.Warn("snowflake lease renewal failed", "err", err)
			if s.needsRegister() {
				delay = backoff.Pause(1) // lease taken: register again soon
			}
		}
		cancel()
	}
}

// Takeover gives the worker lease up at once and registers again, as a
// process new to the store would: the store's cluster ID changed (it was
// restored from a backup or recovered after a quorum loss), so the lease
// it granted is void there and the worker ID may go to another allocsvr
// once the restored store's wait is over. No ID is issued from here until
// the new registration succeeds; the high-water mark stays, so a worker ID
// granted again still starts above everything this process issued.
func (s *Service) Takeover(reason string) {
	if s.closed.Load() {
		return
	}
	if l := s.lease.Load(); l != nil && l.lostReason == "" {
		s.loseLease(l, reason)
	} else {
		s.mu.Lock()
		s.needRegister = true
		s.mu.Unlock()
	}
	if s.cache != nil {
		// A restart before the new registration must not serve from the
		// old cluster's lease.
		if err := s.cache.update(func(c *cacheData) { c.LeaseValidUntilMs = 0 }); err != nil {
			s.log.Warn("snowflake cache not updated", "err", err)
		}
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Service) needsRegister() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.needRegister || s.lease.Load() == nil
}

func (s *Service) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	// Only RegisterWorker answers failed_precondition for a live holder
	// (ErrLeaseHeld); a renewal's is a lost lease, reported by the fence.
	s.heldElsewhere = errs.Code(err) == connect.CodeFailedPrecondition
	s.heldDetail = ""
	if ce := new(connect.Error); s.heldElsewhere && errors.As(err, &ce) {
		s.heldDetail = ce.Message() // the store's words, without its code
	}
	s.mu.Unlock()
}

// notRegistered is the error while no lease was ever granted.
func (s *Service) notRegistered() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heldElsewhere {
		return fmt.Errorf("%w: node-id %q is held by a live process (%s); this allocsvr takes its snowflake worker over once that lease expires",
			errs.FailedPrecondition, s.cfg.NodeID, cmp.Or(s.heldDetail, "its worker lease is live"))
	}
	return fmt.Errorf("%w: snowflake worker not registered yet: %s", errs.Unavailable, s.lastErr)
}

func (s *Service) lastError() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// NextIDs returns count (1..10000) strictly increasing snowflake IDs, or
// errs.Unavailable (not registered, clock behind), errs.FailedPrecondition
// (lease lost) or errs.InvalidArgument (count).
func (s *Service) NextIDs(ctx context.Context, count int) ([]int64, error) {
	if count < 1 || count > spec.MaxCount {
		return nil, fmt.Errorf("%w: count %d outside 1..%d", errs.InvalidArgument, count, spec.MaxCount)
	}
	gen, err := s.serving()
	if err != nil {
		return nil, err
	}
	ids := make([]int64, count)
	if err := gen.fill(ctx, ids); err != nil {
		if hwErr := s.highWater(gen); hwErr != nil {
			return nil, hwErr // this call's write of the mark failed
		}
		return nil, err
	}
	s.metrics.ids.Add(float64(count))
	return ids, nil
}

// serving returns the generator when IDs may be issued now, or why not.
func (s *Service) serving() (*Generator, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("%w: snowflake generator is shutting down", errs.Unavailable)
	}
	gen, l := s.gen.Load(), s.lease.Load()
	if gen == nil || l == nil {
		return nil, s.notRegistered()
	}
	if reason := s.fenceReason(l); reason != "" && !noSelfFence() {
		return nil, fmt.Errorf("%w: %s", errs.FailedPrecondition, reason)
	}
	if err := s.highWater(gen); err != nil {
		return nil, err
	}
	return gen, nil
}

// highWater is nil while gen can write its high-water mark, and otherwise
// the answer to a call (errs.Unavailable naming the data dir): IDs stop
// until a write of the mark succeeds again (hwfail.go). It retries the
// write (at most every hwRetryInterval) and logs each change.
func (s *Service) highWater(gen *Generator) error {
	err := gen.retryHighWater()
	s.mu.Lock()
	was := s.hwFailing
	s.hwFailing = err != nil
	s.mu.Unlock()
	switch {
	case err != nil && !was:
		s.log.Error("cannot write the snowflake high-water mark: snowflake IDs stopped until it can be written (free space in the data dir)", "data_dir", s.cfg.DataDir, "err", err)
	case err == nil && was:
		s.log.Info("snowflake high-water mark written again; serving snowflake IDs", "data_dir", s.cfg.DataDir)
	}
	if err != nil {
		return fmt.Errorf("%w: snowflake IDs stopped: cannot write the high-water mark in %s: %v", errs.Unavailable, s.cfg.DataDir, err)
	}
	return nil
}

// fenceReason says why the lease does not allow IDs now, "" when it does.
func (s *Service) fenceReason(l *workerLease) string {
	if l.lostReason != "" {
		return l.lostReason
	}
	if !s.clock.Now().Before(l.fenceAt) {
		return fmt.Sprintf("worker lease lost: no renewal succeeded within the lease TTL minus %s (last error: %s)",
			s.cfg.FenceMargin, s.lastError())
	}
	return ""
}

// Decode splits id with the cluster's layout (the default layout before the
// first registration). IDs that are negative, do not fit the layout, or
// claim a time further ahead than twice MaxClockOffset plus a second are
// errs.InvalidArgument.
func (s *Service) Decode(id int64) (*seqsvrv1.DecodeSnowflakeResponse, error) {
	lay, _ := newLayout(spec.DefaultLayout())
	if gen := s.gen.Load(); gen != nil {
		lay = gen.lay
	}
	limit := s.clock.Now().Add(2*s.cfg.MaxClockOffset + time.Second).UnixMilli()
	return lay.decode(id, limit)
}

// Status reports the worker, lease, clock offset and fence state.
func (s *Service) Status() *seqsvrv1.SnowflakeStatus {
	st := &seqsvrv1.SnowflakeStatus{Enabled: true, NodeId: s.cfg.NodeID, WorkerId: -1}
	s.mu.Lock()
	st.ClockOffsetMs = s.clockOffsetMs
	s.mu.Unlock()
	gen, l := s.gen.Load(), s.lease.Load()
	if gen == nil || l == nil {
		st.Fenced = true
		st.Reason = errs.Detail(s.notRegistered())
		return st
	}
	st.WorkerId = gen.WorkerID()
	st.LeaseExpiresMs = l.leaseExpiresMs
	st.LastTimestampMs = gen.LastTimestampMs()
	st.Layout = gen.lay.proto()
	hwErr := gen.highWaterErr()
	switch reason := s.fenceReason(l); {
	case s.closed.Load():
		st.Fenced, st.Reason = true, "shutting down"
	case hwErr != nil:
		st.Fenced = true
		st.Reason = fmt.Sprintf("cannot write the snowflake high-water mark in %s (%v); snowflake IDs stopped until it can be written", s.cfg.DataDir, hwErr)
	case reason != "" && noSelfFence():
		st.Reason = plantedNote("serving although " + reason)
	case reason != "":
		st.Fenced, st.Reason = true, reason
	case l.fromCache:
		st.Reason = "serving from the data-dir cache; store unreachable: " + s.lastError()
	}
	return st
}

// Close stops renewing and persists the cache with the exact last
// timestamp issued, so a restart need not wait out the high-water margin.
// Further NextIDs calls answer errs.Unavailable.
func (s *Service) Close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.cancel != nil {
			s.cancel()
			<-s.done
		}
		if gen := s.gen.Load(); gen != nil && s.cache != nil {
			last := gen.freeze()
			if err := s.cache.update(func(c *cacheData) {
				if c.WorkerID == gen.WorkerID() {
					c.HighWaterMs = last
				}
			}); err != nil {
				s.log.Warn("snowflake cache not saved at close", "err", err)
			}
		}
		s.cache.close()
	})
}
