package snowflake

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// The generator's internal limits.
const (
	noLimit                 = math.MaxInt64
	sleepSpinThreshold      = 2 * time.Millisecond
	highWaterExtendFraction = 2 // extend in the background when within ahead/2 of the mark
)

// Generator issues snowflake IDs for one worker ID. It needs no
// store and is safe for concurrent use.
//
// Guarantees: every ID it returns is larger than every ID it returned
// before (so IDs are unique for its worker ID); every timestamp is above the
// floor it was given; it never issues a timestamp above its ceiling (the
// lease) or above the persisted high-water mark, and issues none at all
// from a failed write of that mark until a write succeeds (hwfail.go); the
// clock moving back by at most the tolerance is waited out, by more is
// refused with errs.Unavailable.
type Generator struct {
	clock       clock.Clock
	sleeper     clock.Sleeper // non-nil when the clock controls time (tests)
	maxBackMs   int64
	onBackWait  func()
	onBackError func()

	mu        sync.Mutex
	lay       layout
	workerID  int64
	lastMs    int64 // timestamp of the last ID issued, or the floor
	seq       int64 // sequence of the last ID issued at lastMs
	issued    bool  // false: lastMs is a floor and no ID used it
	ceilingMs int64 // no timestamp above this (lease bound)

	hw        highWater // nil: no persistence
	hwmMs     int64     // highest timestamp known persisted
	hwAheadMs int64
	hwErr     error     // the last write of the mark failed: no IDs (hwfail.go)
	hwErrAt   time.Time // when (g.clock)
	extending bool
	extWG     sync.WaitGroup
}

// highWater persists a timestamp bound ahead of use. Reserve makes sure
// a bound of at least minMs is durable, writing targetMs when it must,
// and returns the durable bound.
type highWater interface {
	Reserve(minMs, targetMs int64) (int64, error)
}

// Option tunes a Generator.
type Option func(*Generator)

// WithMaxBackwardWait sets how far back the clock may move and be waited
// out (default DefaultConfig().MaxBackwardWait); more is refused with
// errs.Unavailable.
func WithMaxBackwardWait(d time.Duration) Option {
	return func(g *Generator) {
		if d >= 0 {
			g.maxBackMs = int64((d + time.Millisecond - 1) / time.Millisecond)
		}
	}
}

// WithCeiling bounds the timestamps the generator may issue (unix ms).
func WithCeiling(ms int64) Option {
	return func(g *Generator) { g.ceilingMs = ms }
}

// withHighWater makes the generator persist a bound ahead of every
// timestamp it issues. limitMs is the bound already durable.
func withHighWater(hw highWater, limitMs int64, ahead time.Duration) Option {
	return func(g *Generator) {
		g.hw, g.hwmMs, g.hwAheadMs = hw, limitMs, ahead.Milliseconds()
	}
}

func withBackwardHooks(wait, refuse func()) Option {
	return func(g *Generator) { g.onBackWait, g.onBackError = wait, refuse }
}

// NewGenerator returns a generator for workerID that issues only
// timestamps above floorMs (unix ms). clk nil means clock.System().
func NewGenerator(layout *seqsvrv1.SnowflakeLayout, workerID, floorMs int64, clk clock.Clock, opts ...Option) (*Generator, error) {
	lay, err := newLayout(layout)
	if err != nil {
		return nil, err
	}
	if workerID < 0 || workerID > lay.workerMask {
		return nil, fmt.Errorf("%w: worker ID %d outside the layout's 0..%d", errs.InvalidArgument, workerID, lay.workerMask)
	}
	clk = clock.Or(clk)
	g := &Generator{
		clock:     clk,
		maxBackMs: DefaultConfig().MaxBackwardWait.Milliseconds(),
		lay:       lay,
		workerID:  workerID,
		lastMs:    max(floorMs, lay.epochMs),
		ceilingMs: noLimit,
		hwmMs:     noLimit,
	}
	g.sleeper, _ = clk.(clock.Sleeper)
	for _, o := range opts {
		o(g)
	}
	return g, nil
}

// NextID returns one ID.
func (g *Generator) NextID(ctx context.Context) (int64, error) {
	var one [1]int64
	if err := g.fill(ctx, one[:]); err != nil {
		return 0, err
	}
	return one[0], nil
}

// NextIDs returns count (1..10000) strictly increasing IDs.
func (g *Generator) NextIDs(ctx context.Context, count int) ([]int64, error) {
	if count < 1 || count > spec.MaxCount {
		return nil, fmt.Errorf("%w: count %d outside 1..%d", errs.InvalidArgument, count, spec.MaxCount)
	}
	ids := make([]int64, count)
	if err := g.fill(ctx, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// fill writes len(dst) IDs. On error nothing in dst is valid; the skipped
// IDs are never reused, which costs nothing since IDs are time-based.
func (g *Generator) fill(ctx context.Context, dst []int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := 0; i < len(dst); {
		ts, err := g.tick(ctx)
		if err != nil {
			return err
		}
		first := int64(0)
		if ts == g.lastMs && g.issued {
			first = g.seq + 1
		}
		n := min(int64(len(dst)-i), g.lay.seqMask-first+1)
		base := (ts-g.lay.epochMs)<<g.lay.tsShift | g.workerID<<g.lay.workerShift
		for s := first; s < first+n; s++ {
			dst[i] = base | s
			i++
		}
		g.lastMs, g.seq, g.issued = ts, first+n-1, true
	}
	return nil
}

// tick returns the timestamp for the next ID: the clock's millisecond once
// it is usable, waiting out sequence exhaustion and small backward steps.
// Called with g.mu held.
func (g *Generator) tick(ctx context.Context) (int64, error) {
	for {
		now := g.clock.Now()
		nowMs := now.UnixMilli()
		minMs := g.lastMs + 1
		if g.issued && g.seq < g.lay.seqMask {
			minMs = g.lastMs
		}
		if nowMs >= minMs {
			return nowMs, g.admit(nowMs)
		}
		if behind := g.lastMs - nowMs; behind > g.maxBackMs {
			if g.onBackError != nil {
				g.onBackError()
			}
			if g.issued {
				return 0, fmt.Errorf("%w: clock moved backwards by %dms (tolerance %dms)", errs.Unavailable, behind, g.maxBackMs)
			}
			return 0, fmt.Errorf("%w: clock is %dms behind the worker's timestamp floor %d (a recent holder of the worker ID may have used it); retry later",
				errs.Unavailable, behind, g.lastMs)
		} else if behind > 0 && g.issued && g.onBackWait != nil {
			g.onBackWait()
		}
		if err := g.waitUntil(ctx, now, minMs); err != nil {
			return 0, err
		}
	}
}

// admit checks ts against the layout, the lease ceiling and the durable
// high-water mark, extending the latter when needed.
func (g *Generator) admit(ts int64) error {
	if ts-g.lay.epochMs > g.lay.maxTsDelta {
		return fmt.Errorf("%w: timestamp %s is beyond the layout's range", errs.ResourceExhausted, formatMs(ts))
	}
	if ts > g.ceilingMs {
		return fmt.Errorf("%w: worker lease lost: clock %s is past the lease bound %s", errs.FailedPrecondition, formatMs(ts), formatMs(g.ceilingMs))
	}
	if g.hw == nil {
		return nil
	}
	if g.retryLocked(ts) != nil {
		return g.stoppedErr()
	}
	if ts > g.hwmMs {
		// On the ID path: only when the background extension fell behind.
		lim, err := g.hw.Reserve(ts, ts+g.hwAheadMs)
		if err != nil {
			g.failHighWater(err)
			return g.stoppedErr()
		}
		g.hwmMs = max(g.hwmMs, lim)
	}
	if !g.extending && ts > g.hwmMs-g.hwAheadMs/highWaterExtendFraction {
		// Extend off the hot path so the fsync rarely stalls callers.
		// It asks for more than the mark it knows (not for ts, which the
		// mark already covers), so it really writes.
		g.extending = true
		g.extWG.Add(1)
		known := g.hwmMs
		go func() {
			defer g.extWG.Done()
			lim, err := g.hw.Reserve(known+1, ts+g.hwAheadMs)
			g.mu.Lock()
			defer g.mu.Unlock()
			g.extending = false
			if err != nil {
				g.failHighWater(err)
			} else {
				g.hwmMs = max(g.hwmMs, lim)
			}
		}()
	}
	return nil
}

// waitUntil returns once the clock may have reached minMs, or ctx is done.
func (g *Generator) waitUntil(ctx context.Context, now time.Time, minMs int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := time.UnixMilli(minMs).Sub(now)
	switch {
	case g.sleeper != nil:
		g.sleeper.Sleep(d)
	case d > sleepSpinThreshold:
		time.Sleep(d - time.Millisecond)
	default:
		// Less than a couple of ms: a sleep would overshoot by far more
		// than the wait, so yield and re-read the clock.
		runtime.Gosched()
	}
	return nil
}

// Decode splits an ID of this generator's layout; see Service.Decode.
func (g *Generator) Decode(id int64, futureTolerance time.Duration) (*seqsvrv1.DecodeSnowflakeResponse, error) {
	return g.lay.decode(id, g.clock.Now().Add(futureTolerance).UnixMilli())
}

// WorkerID is the worker ID the generator encodes.
func (g *Generator) WorkerID() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.workerID
}

// LastTimestampMs is the timestamp of the last ID issued (or the floor).
func (g *Generator) LastTimestampMs() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastMs
}

// setCeiling moves the lease bound (either way: a renewal extends it, a
// lost lease would never be extended).
func (g *Generator) setCeiling(ms int64) {
	g.mu.Lock()
	g.ceilingMs = ms
	g.mu.Unlock()
}

// reassign switches to a (possibly different) worker ID with a new floor
// and ceiling. The next ID gets a timestamp above both the floor and
// every timestamp issued so far, so IDs keep increasing across the switch.
func (g *Generator) reassign(workerID, floorMs, ceilingMs int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if workerID < 0 || workerID > g.lay.workerMask {
		return fmt.Errorf("%w: worker ID %d outside the layout's 0..%d", errs.InvalidArgument, workerID, g.lay.workerMask)
	}
	if floorMs >= g.lastMs {
		g.lastMs, g.issued = floorMs, false
	} else if workerID != g.workerID {
		g.issued = false
	}
	g.workerID, g.ceilingMs = workerID, ceilingMs
	return nil
}

// freeze stops issuing (ceiling below everything) and returns the last
// timestamp issued, so the caller can persist an exact high-water mark.
func (g *Generator) freeze() int64 {
	g.mu.Lock()
	g.ceilingMs = math.MinInt64
	last := g.lastMs
	g.mu.Unlock()
	g.extWG.Wait()
	return last
}
