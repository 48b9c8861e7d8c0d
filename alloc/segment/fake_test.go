package segment

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

// fakeStore is an in-memory Store for unit tests only. It counts
// calls, records requested sizes, tracks concurrent reservations per tag and
// can be taken down, gated, or made to lose a committed reply.
type fakeStore struct {
	mu       sync.Mutex
	tags     map[string]*seqsvrv1.Tag
	byReq    map[string]*seqsvrv1.Segment
	sizes    map[string][]int64
	segs     map[string][]*seqsvrv1.Segment // every committed segment, for checks
	inflight map[string]int
	maxIn    map[string]int

	reserves atomic.Int64
	gets     atomic.Int64
	down     atomic.Bool
	// loseReply makes the next commit answer a transient error, as if the
	// reply was lost after the store committed.
	loseReply atomic.Bool
	maxSize   int64         // when set, larger sizes are invalid_argument, as --max-segment-size
	gate      chan struct{} // when set, each reservation takes one token first
	delay     time.Duration
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		tags: map[string]*seqsvrv1.Tag{}, byReq: map[string]*seqsvrv1.Segment{},
		sizes: map[string][]int64{}, segs: map[string][]*seqsvrv1.Segment{},
		inflight: map[string]int{}, maxIn: map[string]int{},
	}
}

func (f *fakeStore) create(tag string, start, step int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags[tag] = &seqsvrv1.Tag{Tag: tag, MaxId: start, Step: step}
}

func (f *fakeStore) remove(tag string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tags, tag)
}

// GetTag makes the fake a TagGetter, as the real store client is.
func (f *fakeStore) GetTag(ctx context.Context, tag string) (*seqsvrv1.Tag, error) {
	f.gets.Add(1)
	if f.down.Load() {
		return nil, fmt.Errorf("%w: fake store down", errs.Unavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tags[tag]
	if !ok {
		return nil, fmt.Errorf("%w: fake: tag %q", errs.NotFound, tag)
	}
	return &seqsvrv1.Tag{Tag: t.Tag, MaxId: t.MaxId, Step: t.Step}, nil
}

func (f *fakeStore) sizesOf(tag string) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.sizes[tag]...)
}

func (f *fakeStore) segments(tag string) []*seqsvrv1.Segment {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*seqsvrv1.Segment(nil), f.segs[tag]...)
}

func (f *fakeStore) maxInflight(tag string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxIn[tag]
}

func (f *fakeStore) ReserveSegment(ctx context.Context, tag string, size int64, reqID string) (*seqsvrv1.Segment, error) {
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
	f.sizes[tag] = append(f.sizes[tag], size) // refused sizes too
	if f.maxSize > 0 && size > f.maxSize {
		return nil, fmt.Errorf("%w: fake: size %d is above --max-segment-size %d", errs.InvalidArgument, size, f.maxSize)
	}
	if size == 0 {
		size = t.Step
	}
	if t.MaxId > math.MaxInt64-size { // as the store refuses it
		return nil, fmt.Errorf("%w: fake: size %d would pass 2^63-1", errs.ResourceExhausted, size)
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

func tagStatus(a *Allocator, tag string) *seqsvrv1.TagStatus {
	for _, s := range a.Status() {
		if s.GetTag() == tag {
			return s
		}
	}
	return nil
}

func nextReady(a *Allocator, tag string) func() bool {
	return func() bool {
		s := tagStatus(a, tag)
		return s != nil && s.GetNextReady()
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newTest(t *testing.T, store Store, cfg Config) *Allocator {
	if cfg.EmptyWait == 0 {
		cfg.EmptyWait = 5 * time.Second // generous: -race on a busy box
	}
	a := New(store, cfg)
	t.Cleanup(a.Close)
	return a
}

// setup is the common start of a test: an allocator with cfg over a fake
// store that holds tag (max_id start, step step).
func setup(t *testing.T, tag string, start, step int64, cfg Config) (context.Context, *fakeStore, *Allocator) {
	f := newFakeStore()
	f.create(tag, start, step)
	return testCtx(t), f, newTest(t, f, cfg)
}

// nextID is NextIDs(ctx, tag, 1), the single-ID call every request makes.
func nextID(ctx context.Context, a *Allocator, tag string) (int64, error) {
	ids, err := a.NextIDs(ctx, tag, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

func mustNext(t *testing.T, ctx context.Context, a *Allocator, tag string) int64 {
	t.Helper()
	id, err := nextID(ctx, a, tag)
	if err != nil {
		t.Fatalf("NextIDs(%q, 1): %v", tag, err)
	}
	return id
}
