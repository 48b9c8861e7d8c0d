package segment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// nextSlow serves a request the fast path could not: the tag is not loaded
// yet, or the current segment cannot cover it. It switches segments, starts
// loads, and waits at most EmptyWait for one that is in flight.
func (a *Allocator) nextSlow(ctx context.Context, name string, count int) ([]Range, error) {
	t, err := a.tagFor(name)
	if err != nil {
		return nil, err
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		t.mu.Lock()
		res, ok := a.takeLocked(t, int64(count))
		if ok {
			if b := t.cur.Load(); b.used() >= b.prefetchAt-b.first {
				a.startLoadLocked(t)
			}
			t.mu.Unlock()
			return res, nil
		}
		if a.closed.Load() {
			t.mu.Unlock()
			return nil, a.unavailable(fmt.Errorf("%w: tag %q: allocator closed", errs.Unavailable, name))
		}
		a.startLoadLocked(t)
		if !t.loading {
			// In backoff after a failure: answer now rather than make every
			// caller sit out the outage (and the store is not asked again).
			err := t.emptyErrLocked()
			t.mu.Unlock()
			return nil, a.unavailable(err)
		}
		done := t.loadDone
		t.mu.Unlock()

		if timer == nil {
			timer = time.NewTimer(a.cfg.EmptyWait)
		}
		select {
		case <-done:
		case <-timer.C:
			return nil, a.unavailable(fmt.Errorf("%w: tag %q: buffers empty and the segment load did not finish within %v", errs.Unavailable, name, a.cfg.EmptyWait))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// emptyErrLocked is the answer when both buffers are empty and no load will
// finish soon.
func (t *tagState) emptyErrLocked() error {
	switch {
	case t.gone || t.removed:
		return fmt.Errorf("%w: tag %q", errs.NotFound, t.name)
	case t.exhausted:
		return fmt.Errorf("%w: tag %q: its ID space is used up: %v", errs.ResourceExhausted, t.name, t.lastLoadErr)
	case t.lastLoadErr != nil:
		return fmt.Errorf("%w: tag %q: buffers empty and the store failed: %v", errs.Unavailable, t.name, t.lastLoadErr)
	}
	return fmt.Errorf("%w: tag %q: buffers empty", errs.Unavailable, t.name)
}

func (a *Allocator) unavailable(err error) error {
	if errors.Is(err, errs.Unavailable) {
		a.m.unavailable()
	}
	return err
}

// tagFor returns the state of a tag, creating it on first use. Names are
// validated here, before anything can reach the store.
func (a *Allocator) tagFor(name string) (*tagState, error) {
	if t := a.lookup(name); t != nil {
		// The cache slot may hold a removed incarnation of this name, which
		// find would never replace (the name matches).
		a.cache[cacheSlot(name)].Store(t)
		return t, nil
	}
	if err := spec.CheckTag(name); err != nil {
		return nil, err
	}
	if a.neg.has(name, time.Now()) {
		return nil, fmt.Errorf("%w: tag %q", errs.NotFound, name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := *a.tags.Load()
	if t := old[name]; t != nil {
		return t, nil
	}
	if a.unconfirmed >= maxUnconfirmed {
		return nil, a.unavailable(fmt.Errorf("%w: tag %q: %d tags are waiting for the store's first answer", errs.Unavailable, name, a.unconfirmed))
	}
	a.unconfirmed++
	m := make(map[string]*tagState, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	t := newTagState(name)
	t.counted = true
	m[name] = t
	a.tags.Store(&m)
	a.cache[cacheSlot(name)].Store(t)
	return t, nil
}

// dropTag removes a tag that never existed, so random names cannot grow the
// map; the negative cache answers for it meanwhile.
func (a *Allocator) dropTag(t *tagState) {
	a.neg.add(t.name, time.Now().Add(a.cfg.NegativeCacheTTL))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.uncountLocked(t)
	old := *a.tags.Load()
	if old[t.name] != t {
		return
	}
	m := make(map[string]*tagState, len(old))
	for k, v := range old {
		if k != t.name {
			m[k] = v
		}
	}
	a.tags.Store(&m)
	a.uncache(t)
}

// maxUnconfirmed bounds the tags created on a caller's word and not yet
// confirmed by the store; past it a new name is answered unavailable
// (the store is slow or away: a known tag already in the map still serves).
const maxUnconfirmed = 10000

// confirm takes t, whose first segment arrived, out of the unconfirmed
// count (t.mu held; the lock order is t.mu, then a.mu).
func (a *Allocator) confirm(t *tagState) {
	a.mu.Lock()
	a.uncountLocked(t)
	a.mu.Unlock()
}

func (a *Allocator) uncountLocked(t *tagState) {
	if t.counted {
		t.counted = false
		a.unconfirmed--
	}
}

// negCache remembers tags the store said do not exist.
type negCache struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// negCacheMax bounds the cache; past it, expired entries are dropped and,
// if that is not enough, everything (the store then answers again).
const negCacheMax = 10000

func (c *negCache) has(name string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.m[name]
	if ok && now.After(exp) {
		delete(c.m, name)
		return false
	}
	return ok
}

func (c *negCache) add(name string, exp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= negCacheMax {
		now := time.Now()
		for k, e := range c.m {
			if now.After(e) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= negCacheMax {
			c.m = map[string]time.Time{}
		}
	}
	c.m[name] = exp
}
