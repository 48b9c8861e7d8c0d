package snowflake

import (
	"fmt"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// hwRetryInterval is how often a generator whose high-water mark could not
// be written tries again: often enough to serve again soon after the disk
// has room, rarely enough that a full disk is not hammered by every call.
const hwRetryInterval = 200 * time.Millisecond

// Failing closed on the high-water mark. A mark that cannot be written
// (full disk, I/O error) stops the generator at once, not only once the
// clock passes the mark last made durable: the operator learns of it while
// IDs are still safe, and Status says why. Any successful write of the mark
// (a call's, the background extension's, or retryHighWater's) resumes it.

// failHighWater records a failed write of the mark. Called with g.mu held.
func (g *Generator) failHighWater(err error) {
	g.hwErr, g.hwErrAt = err, g.clock.Now()
}

// stoppedErr is the answer while the mark cannot be written. Called with
// g.mu held and g.hwErr set.
func (g *Generator) stoppedErr() error {
	return fmt.Errorf("%w: snowflake IDs stopped: cannot persist the snowflake high-water mark: %v", errs.Unavailable, g.hwErr)
}

// highWaterErr is the last failed write of the mark, nil once a write
// succeeded (or without persistence).
func (g *Generator) highWaterErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hwErr
}

// retryHighWater writes the mark again when the last write failed at least
// hwRetryInterval ago, and returns the error still standing (nil: serving).
func (g *Generator) retryHighWater() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.retryLocked(max(g.lastMs, g.clock.Now().UnixMilli()))
}

// retryLocked is retryHighWater for a mark covering ms, with g.mu held.
func (g *Generator) retryLocked(ms int64) error {
	if g.hwErr == nil || g.hw == nil || g.clock.Now().Sub(g.hwErrAt) < hwRetryInterval {
		return g.hwErr
	}
	// One past the known mark: a retry must write, to learn whether the
	// data dir takes writes again (a mark that already covers ms would
	// otherwise be answered without touching the disk).
	lim, err := g.hw.Reserve(max(ms, g.hwmMs+1), ms+g.hwAheadMs)
	if err != nil {
		g.failHighWater(err)
		return err
	}
	g.hwErr = nil
	g.hwmMs = max(g.hwmMs, lim)
	return nil
}
