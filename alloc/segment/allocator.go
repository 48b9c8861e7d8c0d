package segment

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Store is the part of the store the segment allocator needs.
// *storeclient.Client satisfies it.
type Store interface {
	ReserveSegment(ctx context.Context, tag string, size int64, requestID string) (*seqsvrv1.Segment, error)
}

// TagGetter is what the allocator needs to notice deleted tags between
// reservations: a linearizable GetTag. A Store that has it (as
// *storeclient.Client does) is asked about every buffered tag once per
// Config.TagCheckInterval.
type TagGetter interface {
	GetTag(ctx context.Context, tag string) (*seqsvrv1.Tag, error)
}

// Config tunes the segment allocator. Zero values take DefaultConfig's.
type Config struct {
	// MaxStep caps the dynamic step (default 1,000,000). A tag whose stored
	// step is larger always reserves its stored step.
	MaxStep int64
	// A segment that lasted less than FastRefill doubles the next
	// reservation; one that lasted more than SlowRefill halves it
	// (defaults 15m and 30m, as in Leaf).
	FastRefill, SlowRefill time.Duration
	// PrefetchRatio is the used fraction of the current segment at which
	// the next one is reserved (default 0.1).
	PrefetchRatio float64
	// NegativeCacheTTL is how long a not_found from the store is believed
	// before asking again (default 500ms), so unknown tags do not hammer
	// the store and a new tag is usable within a second.
	NegativeCacheTTL time.Duration
	// EmptyWait bounds how long a request waits for an in-flight load when
	// both buffers are empty before it answers errs.Unavailable (default 500ms).
	EmptyWait time.Duration
	// LoadTimeout bounds one reservation, store-client retries included
	// (default 5s).
	LoadTimeout time.Duration
	// TagCheckInterval is how often the tags this allocator buffers are
	// looked up in the store (one GetTag each, one at a time) so that a
	// deleted tag's buffers are dropped (default 5s; negative: never, a
	// deletion is then noticed only by the next reservation). Needs a
	// Store that is a TagGetter.
	TagCheckInterval time.Duration
	// LoadBackoff and LoadBackoffMax space out reservations after failures
	// so a dead store is not hammered (defaults 50ms doubling to 2s,
	// jittered: errs.Backoff).
	LoadBackoff, LoadBackoffMax time.Duration
	// Clock is the wall clock for the dynamic step and Status (nil means
	// clock.System()). Waits and backoff use the monotonic clock.
	Clock clock.Clock
	// Logger defaults to slog.Default(); the caller names the component.
	Logger *slog.Logger
	// Registerer receives the allocator's metrics; nil means no metrics.
	Registerer prometheus.Registerer
}

// DefaultConfig is the configuration where the caller sets nothing: every
// default of the allocator, defined here only (the allocsvr's flags show
// these values). A zero field of the Config given to New takes its value
// from here.
func DefaultConfig() Config {
	return Config{
		MaxStep:          1_000_000,
		FastRefill:       15 * time.Minute,
		SlowRefill:       30 * time.Minute,
		PrefetchRatio:    0.1,
		NegativeCacheTTL: 500 * time.Millisecond,
		EmptyWait:        500 * time.Millisecond,
		LoadTimeout:      5 * time.Second,
		TagCheckInterval: 5 * time.Second,
		LoadBackoff:      50 * time.Millisecond,
		LoadBackoffMax:   2 * time.Second,
		Clock:            clock.System(),
		Logger:           slog.Default(),
	}
}

// withDefaults returns c with every unset field given its DefaultConfig
// value.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	orDefault(&c.MaxStep, d.MaxStep)
	orDefault(&c.FastRefill, d.FastRefill)
	orDefault(&c.SlowRefill, d.SlowRefill)
	if c.PrefetchRatio <= 0 || c.PrefetchRatio > 1 {
		c.PrefetchRatio = d.PrefetchRatio
	}
	orDefault(&c.NegativeCacheTTL, d.NegativeCacheTTL)
	orDefault(&c.EmptyWait, d.EmptyWait)
	orDefault(&c.LoadTimeout, d.LoadTimeout)
	if c.TagCheckInterval == 0 { // negative: never
		c.TagCheckInterval = d.TagCheckInterval
	}
	orDefault(&c.LoadBackoff, d.LoadBackoff)
	if c.LoadBackoffMax < c.LoadBackoff {
		c.LoadBackoffMax = max(d.LoadBackoffMax, c.LoadBackoff)
	}
	if c.Clock == nil {
		c.Clock = d.Clock
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}

// orDefault sets *v to d when *v is not positive (unset).
func orDefault[T int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Allocator serves segment IDs from per-tag double buffers.
type Allocator struct {
	store Store
	cfg   Config
	log   *slog.Logger
	m     *metrics
	epoch time.Time // origin of the monotonic nanos used for backoff

	// tags is a copy-on-write map: the hot path reads it with one atomic
	// load and no lock; the rare tag creation copies it under mu.
	tags  atomic.Pointer[map[string]*tagState]
	cache tagCache
	mu    sync.Mutex
	neg   negCache
	// unconfirmed counts the tags in the map the store has not yet
	// confirmed by a segment (under mu): names callers gave, bounded by
	// maxUnconfirmed so that a flood of unknown names while the store is
	// away cannot grow the map.
	unconfirmed int

	ctx    context.Context // cancelled by Close; parent of every load
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	// onNext, a test hook, runs in takeLocked (under the tag's lock) when a
	// request moves on from the current segment to the next one.
	onNext func()
}

// New returns an allocator that reserves segments from store.
func New(store Store, cfg Config) *Allocator {
	cfg = cfg.withDefaults()
	a := &Allocator{
		store: store,
		cfg:   cfg,
		log:   cfg.Logger,
		epoch: time.Now(),
		neg:   negCache{m: map[string]time.Time{}},
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	empty := map[string]*tagState{}
	a.tags.Store(&empty)
	a.m = newMetrics(a, cfg.Registerer, a.log)
	if g, ok := store.(TagGetter); ok && cfg.TagCheckInterval > 0 {
		a.wg.Add(1)
		go a.watchDeletions(g)
	}
	return a
}

// Close stops the background loaders and waits for them. Buffered IDs may
// still be served; a request that needs the store answers errs.Unavailable.
func (a *Allocator) Close() {
	a.closed.Store(true)
	a.cancel()
	a.wg.Wait()
}

// mono is the monotonic clock in nanoseconds since the allocator started.
func (a *Allocator) mono() int64 { return int64(time.Since(a.epoch)) }

func (a *Allocator) lookup(tag string) *tagState {
	return (*a.tags.Load())[tag]
}

// NextIDs returns count strictly increasing IDs of tag. count must be in
// 1..spec.MaxCount: a request's count goes through spec.CheckCount first.
func (a *Allocator) NextIDs(ctx context.Context, tag string, count int) ([]int64, error) {
	if count < 1 || count > spec.MaxCount {
		return nil, fmt.Errorf("%w: count %d out of range 1..%d", errs.InvalidArgument, count, spec.MaxCount)
	}
	if t := a.find(tag); t != nil {
		if p, ok := a.takeFast(t, int64(count)); ok {
			out := make([]int64, count)
			for i := range out {
				out[i] = p + int64(i)
			}
			return out, nil
		}
	}
	rs, err := a.nextSlow(ctx, tag, count)
	if err != nil {
		return nil, err
	}
	return expand(rs, count), nil
}
