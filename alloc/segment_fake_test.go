package alloc

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// segFakeStore is an in-memory SegmentStore for unit tests only. It counts
// calls, records requested sizes, tracks concurrent reservations per tag and
// can be taken down, gated, or made to lose a committed reply.
type segFakeStore struct {
	mu       sync.Mutex
	tags     map[string]*seqsvrv1.Tag
	byReq    map[string]*seqsvrv1.Segment
	sizes    map[string][]int64
	segs     map[string][]*seqsvrv1.Segment // every committed segment, for checks
	inflight map[string]int
	maxIn    map[string]int

	reserves atomic.Int64
	down     atomic.Bool
	// loseReply makes the next commit answer a transient error, as if the
	// reply was lost after the store committed.
	loseReply atomic.Bool
	gate      chan struct{} // when set, each reservation takes one token first
	delay     time.Duration
}

func newSegFakeStore() *segFakeStore {
	return &segFakeStore{
		tags: map[string]*seqsvrv1.Tag{}, byReq: map[string]*seqsvrv1.Segment{},
		sizes: map[string][]int64{}, segs: map[string][]*seqsvrv1.Segment{},
		inflight: map[string]int{}, maxIn: map[string]int{},
	}
}

func (f *segFakeStore) create(tag string, start, step int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags[tag] = &seqsvrv1.Tag{Tag: tag, MaxId: start, Step: step}
}

func (f *segFakeStore) remove(tag string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tags, tag)
}

func (f *segFakeStore) sizesOf(tag string) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.sizes[tag]...)
}

func (f *segFakeStore) segments(tag string) []*seqsvrv1.Segment {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*seqsvrv1.Segment(nil), f.segs[tag]...)
}

func (f *segFakeStore) maxInflight(tag string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxIn[tag]
}

func (f *segFakeStore) ReserveSegment(ctx context.Context, tag string, size int64, reqID string) (*seqsvrv1.Segment, error) {
	f.reserves.Add(1)
	f.mu.Lock()
	f.inflight[tag]++
	f.maxIn[tag] = max(f.maxIn[tag], f.inflight[tag])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight[tag]--
		f.mu.Unlock()
	}()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: fake: %v", errs.Unavailable, ctx.Err())
		}
	}
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.down.Load() {
		return nil, fmt.Errorf("%w: fake store down", errs.Unavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if size < 0 {
		return nil, fmt.Errorf("%w: fake: negative size", errs.InvalidArgument)
	}
	if s, ok := f.byReq[reqID]; ok && reqID != "" {
		return s, nil
	}
	t, ok := f.tags[tag]
	if !ok {
		return nil, fmt.Errorf("%w: fake: tag %q", errs.NotFound, tag)
	}
	f.sizes[tag] = append(f.sizes[tag], size)
	if size == 0 {
		size = t.Step
	}
	if t.MaxId > math.MaxInt64-size { // as the store refuses it
		return nil, fmt.Errorf("%w: fake: size %d would overflow", errs.InvalidArgument, size)
	}
	s := &seqsvrv1.Segment{Tag: tag, First: t.MaxId + 1, Last: t.MaxId + size, Step: t.Step}
	t.MaxId = s.Last
	f.segs[tag] = append(f.segs[tag], s)
	if reqID != "" {
		f.byReq[reqID] = s
	}
	if f.loseReply.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("%w: fake: reply lost", errs.Unavailable)
	}
	return s, nil
}

// segFakeClock is an injectable wall clock.
type segFakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *segFakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *segFakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// segWaitFor polls cond until it holds or the deadline passes.
func segWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func segTagStatus(a *SegmentAllocator, tag string) *seqsvrv1.TagStatus {
	for _, s := range a.Status() {
		if s.GetTag() == tag {
			return s
		}
	}
	return nil
}

func segNextReady(a *SegmentAllocator, tag string) func() bool {
	return func() bool {
		s := segTagStatus(a, tag)
		return s != nil && s.GetNextReady()
	}
}

func segCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func segNew(t *testing.T, store SegmentStore, cfg SegmentConfig) *SegmentAllocator {
	if cfg.EmptyWait == 0 {
		cfg.EmptyWait = 5 * time.Second // generous: -race on a busy box
	}
	a := NewSegmentAllocator(store, cfg)
	t.Cleanup(a.Close)
	return a
}

func segMustNext(t *testing.T, ctx context.Context, a *SegmentAllocator, tag string) int64 {
	t.Helper()
	id, err := a.NextID(ctx, tag)
	if err != nil {
		t.Fatalf("NextID(%q): %v", tag, err)
	}
	return id
}
