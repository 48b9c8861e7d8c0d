package segment

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// kick starts a background load from the fast path, unless a failure's
// backoff is still running.
func (a *Allocator) kick(t *tagState) {
	if a.mono() < t.retryAt.Load() {
		return
	}
	t.mu.Lock()
	a.startLoadLocked(t)
	t.mu.Unlock()
}

// startLoadLocked starts the tag's one loader if a next segment is wanted
// and none is running. A reservation that failed without a definite answer
// is retried with the same request_id and size, so if the store did commit
// it, the retry returns that segment rather than burning another.
func (a *Allocator) startLoadLocked(t *tagState) {
	if t.loading || t.next != nil || t.removed || a.closed.Load() {
		return
	}
	if a.mono() < t.retryAt.Load() {
		return
	}
	if t.pendingReq == "" {
		t.pendingSize = a.nextSizeLocked(t)
		t.pendingReq = newRequestID()
	}
	t.loading = true
	t.needLoad.Store(false)
	a.wg.Add(1)
	go a.load(t, t.pendingSize, t.pendingReq)
}

// nextSizeLocked is Leaf's dynamic step: a segment that lasted under
// FastRefill doubles the next reservation (up to MaxStep), one that lasted
// over SlowRefill halves it (never below the tag's stored step). 0 asks the
// store for the tag's stored step, which the first load does.
func (a *Allocator) nextSizeLocked(t *tagState) int64 {
	if !t.loaded || t.step <= 0 {
		return 0
	}
	maxStep := max(a.cfg.MaxStep, t.baseStep)
	if t.sizeCap > 0 {
		maxStep = min(maxStep, max(t.sizeCap, t.baseStep))
	}
	step := min(t.step, maxStep)
	lasted := a.cfg.Clock.Now().Sub(t.lastLoadAt)
	switch {
	case lasted < a.cfg.FastRefill:
		if step > maxStep/2 {
			step = maxStep
		} else {
			step *= 2
		}
	case lasted > a.cfg.SlowRefill:
		step = max(step/2, t.baseStep)
	}
	t.step = step
	if t.sizeCap > 0 && step <= t.baseStep {
		return 0 // the stored step, which the store never refuses as too large
	}
	return step
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b[:])
}

// load reserves one segment and files it as the tag's next buffer.
func (a *Allocator) load(t *tagState, size int64, reqID string) {
	defer a.wg.Done()
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.LoadTimeout)
	start := time.Now()
	seg, err := a.store.ReserveSegment(ctx, t.name, size, reqID)
	cancel()
	dur := time.Since(start)

	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		err = t.checkSegLocked(seg)
	}
	a.m.load(err, dur)
	t.loading = false
	t.lastLoadDur = dur
	t.lastLoadTime = a.cfg.Clock.Now()
	switch {
	case t.removed:
		// Dropped while the reservation ran (the tag was deleted): its
		// IDs, if any, are left unused.
	case err != nil:
		a.loadFailedLocked(t, err, size)
	default:
		a.loadedLocked(t, seg, size)
	}
	close(t.loadDone)
	t.loadDone = make(chan struct{})
}

// errBadSegment marks a reservation answer the allocator refuses to use.
var errBadSegment = errors.New("store returned an unusable segment")

// checkSegLocked refuses a segment that is empty or not above everything
// this tag served before: handing it out could repeat IDs.
func (t *tagState) checkSegLocked(seg *seqsvrv1.Segment) error {
	switch {
	case seg == nil:
		return fmt.Errorf("%w: none returned", errBadSegment)
	case seg.GetFirst() < 1:
		// IDs are positive (a tag starts at 0 or above); this also keeps
		// every count within a segment clear of int64 overflow.
		return fmt.Errorf("%w: [%d, %d] starts below 1", errBadSegment, seg.GetFirst(), seg.GetLast())
	case seg.GetFirst() > seg.GetLast():
		return fmt.Errorf("%w: empty [%d, %d]", errBadSegment, seg.GetFirst(), seg.GetLast())
	case t.loaded && seg.GetFirst() <= t.high:
		return fmt.Errorf("%w: [%d, %d] not above the last one ending at %d", errBadSegment, seg.GetFirst(), seg.GetLast(), t.high)
	case seg.GetTag() != "" && seg.GetTag() != t.name:
		return fmt.Errorf("%w: of tag %q", errBadSegment, seg.GetTag())
	}
	return nil
}

func (a *Allocator) loadedLocked(t *tagState, seg *seqsvrv1.Segment, size int64) {
	t.next = newBuffer(seg.GetFirst(), seg.GetLast(), a.cfg.PrefetchRatio)
	t.high = seg.GetLast()
	t.pendingReq = ""
	t.failures = 0
	t.lastLoadErr = nil
	t.gone = false
	t.exhausted = false
	t.retryAt.Store(0)
	if st := seg.GetStep(); st > 0 {
		t.baseStep = st
	} else if t.baseStep == 0 {
		t.baseStep = seg.GetLast() - seg.GetFirst() + 1
	}
	if !t.loaded || t.step <= 0 {
		t.step = seg.GetLast() - seg.GetFirst() + 1
	}
	t.step = max(t.step, t.baseStep) // the stored step may have been raised
	if !t.loaded {
		a.confirm(t)
	}
	t.loaded = true
	t.lastLoadAt = a.cfg.Clock.Now()
	// A drained (or never filled) current segment is replaced right away so
	// the fast path serves again; carry must drain first to keep order.
	if b := t.cur.Load(); (len(t.carry) == 0 || dropsCarry()) && b.remaining() == 0 {
		t.carry = nil
		a.switchLocked(t)
	}
	a.log.Debug("segment reserved", "tag", t.name, "first", seg.GetFirst(), "last", seg.GetLast(), "size", size)
}

func (a *Allocator) loadFailedLocked(t *tagState, err error, size int64) {
	t.lastLoadErr = err
	t.failures++
	notFound := errors.Is(err, errs.NotFound)
	// Exhausted with the tag's own step: nothing more will come. With a
	// grown dynamic size the stored step may still fit: ask for it next.
	t.exhausted = errors.Is(err, errs.ResourceExhausted) && size == 0
	if errors.Is(err, errs.ResourceExhausted) {
		t.step = 0
	}
	// A grown size above the store's --max-segment-size is refused as
	// invalid_argument: grow no further than half of it from now on (the
	// stored step always passes, the store checked it).
	capped := errors.Is(err, errs.InvalidArgument) && size > t.baseStep
	if capped {
		t.sizeCap = max(t.baseStep, size/2)
		t.step = min(t.step, t.sizeCap)
	}
	if errs.Judge(errs.StoreCall, err).Definite || errors.Is(err, errBadSegment) {
		// A definite answer (errs.Judge): the reservation did not happen,
		// a new one gets a fresh request_id (and a freshly computed size).
		// Otherwise (timeouts, unavailable, internal) it may have been
		// committed: the retry reuses the request_id and size.
		t.pendingReq = ""
	}
	// The loader retries whole reservations on its own schedule (a kick
	// after retryAt), whatever the answer: errs.Backoff's pauses.
	backoff := errs.Backoff{Min: a.cfg.LoadBackoff, Max: a.cfg.LoadBackoffMax}.Pause(t.failures)
	if capped {
		backoff = 0 // a smaller size is asked for at once
	}
	if notFound {
		t.gone = true
		backoff = a.cfg.NegativeCacheTTL
		if !t.loaded && !t.removed {
			t.removed = true
			a.dropTag(t)
		}
		// A tag that had segments was deleted: its buffers go now rather
		// than being served to the end.
		a.forgetLocked(t, "a reservation answered not found")
	}
	t.retryAt.Store(a.mono() + int64(backoff))
	if !t.removed {
		t.needLoad.Store(true)
	}
	if notFound || a.closed.Load() {
		a.log.Debug("segment load failed", "tag", t.name, "err", err)
	} else {
		a.log.Warn("segment load failed", "tag", t.name, "failures", t.failures, "retry_in", backoff, "err", err)
	}
}
